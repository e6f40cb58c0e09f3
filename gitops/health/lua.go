package main

// Argo CD's runtime for a custom health check (resource.customizations.health.* in
// argocd-cm), rebuilt from what Argo CD's util/lua does, on the gopher-lua it links:
//
//   - a fresh LState per evaluation, with the standard libraries skipped (a custom check
//     gets them only with resource.customizations.useOpenLibs.<group>_<kind>: true,
//     which mcpgov's argocd-cm-patch.yaml does not set), then only `package`, the base
//     library and `table` opened: no `string`, `math`, `io`, `os`, `debug`;
//   - the live object as the global `obj`, converted map by map (integers become
//     numbers, null becomes nil);
//   - a one-second deadline on the whole run;
//   - the script's return value must be a table, read as JSON into {status, message};
//     a status outside Argo CD's six becomes Unknown, "Lua returned an invalid health
//     status".
//
// Argo CD also registers a reduced `os` (time and date only) for require("os"); a health
// check must not depend on the clock, so it is left out: a script that uses it fails here.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
)

const (
	// Argo CD's deadline for one script run.
	luaTimeout = time.Second
	// Deeper than any health result; stops a self-referencing table from recursing.
	maxResultDepth = 64
)

var argoStatuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true,
	"Missing": true, "Unknown": true,
}

type health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// argoHealth runs a health script over obj as Argo CD does.
func argoHealth(ctx context.Context, script string, obj map[string]any) (*health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true},
			lua.LString(lib.name)); err != nil {
			return nil, fmt.Errorf("opening Lua library %q: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, luaTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return nil, err
	}
	ret := l.Get(-1)
	if ret.Type() != lua.LTTable {
		return nil, fmt.Errorf("expect table output from Lua script, not %s", ret.Type())
	}
	plain, err := fromLua(ret, 0)
	if err != nil {
		return nil, err
	}
	// Through JSON, as Argo CD does: a status or message that is not a string fails.
	data, err := json.Marshal(plain)
	if err != nil {
		return nil, err
	}
	hs := &health{}
	if err := json.Unmarshal(data, hs); err != nil {
		return nil, fmt.Errorf("the script's table is not a health status: %w", err)
	}
	if !argoStatuses[hs.Status] {
		return &health{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return hs, nil
}

// toLua converts decoded JSON to Lua values the way Argo CD hands `obj` to a script.
func toLua(l *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case int64:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case json.Number:
		return lua.LString(x)
	case []any:
		t := l.CreateTable(len(x), 0)
		for _, item := range x {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(x))
		for k, item := range x {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

var errNotJSON = errors.New("the script returned a value JSON cannot hold")

// fromLua converts the script's result to plain Go values: a table with a sequence part
// is an array, any other a string-keyed object (as Argo CD's JSON encoder reads tables).
func fromLua(v lua.LValue, depth int) (any, error) {
	if depth > maxResultDepth {
		return nil, fmt.Errorf("the script returned tables nested deeper than %d (a cycle?)", maxResultDepth)
	}
	switch x := v.(type) {
	case lua.LBool:
		return bool(x), nil
	case lua.LNumber:
		return float64(x), nil
	case lua.LString:
		return string(x), nil
	case *lua.LTable:
		if n := x.Len(); n > 0 {
			arr := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				item, err := fromLua(x.RawGetInt(i), depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, item)
			}
			return arr, nil
		}
		obj := map[string]any{}
		var err error
		x.ForEach(func(k, item lua.LValue) {
			if err != nil {
				return
			}
			key, ok := k.(lua.LString)
			if !ok {
				err = fmt.Errorf("the script returned a table with a %s key", k.Type())
				return
			}
			var plain any
			if plain, err = fromLua(item, depth+1); err == nil {
				obj[string(key)] = plain
			}
		})
		return obj, err
	}
	if v == lua.LNil {
		return nil, nil
	}
	return nil, fmt.Errorf("%w: a %s", errNotJSON, v.Type())
}
