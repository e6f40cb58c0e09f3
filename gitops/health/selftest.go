package main

// Checks of the harness itself: that the Lua sandbox is Argo CD's (a script relying on a
// library Argo CD does not open must fail here too), that hostile scripts, expressions
// and fixtures end in an error within a bounded time, and that the Flux evaluation order
// holds. Each case would pass silently if the harness were more lenient than the tools.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func selftest() int {
	t := &tally{name: "selftest"}
	luaSandbox(t)
	luaResults(t)
	celEvaluation(t)
	hostileFixtures(t)
	return t.finish()
}

func sampleObject() map[string]any {
	return map[string]any{
		"apiVersion": "mcpgov.io/v1alpha1",
		"kind":       "Agent",
		"metadata":   map[string]any{"name": "a", "namespace": "n", "generation": int64(3)},
		"status": map[string]any{
			"observedGeneration": int64(3),
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True"},
			},
			"note": nil,
		},
	}
}

func luaSandbox(t *tally) {
	ctx := context.Background()
	// Libraries Argo CD does not open for a custom check (no useOpenLibs).
	for _, script := range []string{
		`return {status = string.format("%s", "Healthy"), message = ""}`,
		`return {status = "Healthy", message = ("x"):upper()}`,
		`return {status = "Healthy", message = tostring(math.floor(1.5))}`,
		`return {status = "Healthy", message = tostring(os.time())}`,
		`return {status = "Healthy", message = io.read("*a")}`,
		`return {status = "Healthy", message = tostring(debug.getinfo(1))}`,
	} {
		_, err := argoHealth(ctx, script, sampleObject())
		t.check(err != nil, "lua: not opened by Argo CD, fails: %s", script)
	}
	// What it does open: base and table.
	hs, err := argoHealth(ctx, `return {status = "Healthy", message = table.concat({"a", tostring(#obj.status.conditions)}, ",")}`, sampleObject())
	t.check(err == nil && hs.Message == "a,1", "lua: base and table are open: %v %v", hs, err)
	// Integers arrive as numbers that print without a fraction; JSON null is nil.
	hs, err = argoHealth(ctx, `return {status = "Healthy", message = tostring(obj.metadata.generation) .. " " .. tostring(obj.status.note == nil)}`, sampleObject())
	t.check(err == nil && hs.Message == "3 true", "lua: obj as Argo CD converts it: %v %v", hs, err)
	// A script that never ends is stopped by Argo CD's deadline.
	start := time.Now()
	_, err = argoHealth(ctx, `while true do end`, sampleObject())
	took := time.Since(start)
	t.check(err != nil && took < 3*luaTimeout, "lua: an endless loop is stopped after %v: %v", took.Round(time.Millisecond), shorten(err))
}

func luaResults(t *tally) {
	ctx := context.Background()
	hs, err := argoHealth(ctx, `return {status = "Fine", message = "m"}`, sampleObject())
	t.check(err == nil && hs.Status == "Unknown" && hs.Message == "Lua returned an invalid health status",
		"lua: a status outside Argo CD's six is Unknown: %v %v", hs, err)
	for _, script := range []string{
		`return "Healthy"`,
		`hs = {status = "Healthy"}`,
		`return {status = 1, message = "m"}`,
		`local t = {status = "Healthy", message = "m"}; t.self = t; return t`,
		`return {status = "Healthy", message = "m", f = function() end}`,
		`error("broken")`,
		`return {status = "Healthy"`,
	} {
		_, err := argoHealth(ctx, script, sampleObject())
		t.check(err != nil, "lua: no health, an error: %s", script)
	}
}

func celEvaluation(t *tally) {
	ctx := context.Background()
	ready := healthExprs{
		InProgress: "status.conditions.exists(c, c.type == 'Reconciling' && c.status == 'True')",
		Failed:     "status.conditions.exists(c, c.type == 'Stalled' && c.status == 'True')",
		Current:    "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
	}
	f, err := newFluxEvaluator(ready)
	if !t.checkErr(err, "cel: the expressions parse") {
		return
	}
	obj := &unstructured.Unstructured{Object: sampleObject()}
	got, _, err := f.read(ctx, obj)
	t.check(err == nil && got == "Current", "cel: Ready=True is Current: %s %v", got, err)

	noStatus := obj.DeepCopy()
	delete(noStatus.Object, "status")
	got, detail, err := f.read(ctx, noStatus)
	t.check(err == nil && got == "Unknown" && detail != "", "cel: no status is an evaluation error, Unknown: %s (%s) %v", got, detail, err)

	// Generation first: not even a broken expression is evaluated.
	broken, err := newFluxEvaluator(healthExprs{Current: "spec.missing.field"})
	if t.checkErr(err, "cel: an expression over an absent field parses") {
		stale := obj.DeepCopy()
		_ = unstructured.SetNestedField(stale.Object, int64(4), "metadata", "generation")
		got, _, err = broken.read(ctx, stale)
		t.check(err == nil && got == "InProgress", "cel: an unobserved generation is InProgress before any expression: %s %v", got, err)
		got, _, err = broken.read(ctx, obj)
		t.check(err == nil && got == "Unknown", "cel: a missing field is Unknown: %s %v", got, err)
	}

	notBool, err := newFluxEvaluator(healthExprs{Current: "1 + 1"})
	if t.checkErr(err, "cel: a non-boolean expression parses") {
		got, _, err = notBool.read(ctx, obj)
		t.check(err == nil && got == "Unknown", "cel: a non-boolean result is Unknown: %s %v", got, err)
	}

	_, err = newFluxEvaluator(healthExprs{Current: "status.conditions.exists(c,"})
	t.check(err != nil, "cel: a syntax error is refused: %v", shorten(err))
	_, err = newFluxEvaluator(healthExprs{Failed: "true"})
	t.check(err != nil, "cel: current is required: %v", err)

	// None true: InProgress.
	none, err := newFluxEvaluator(healthExprs{Current: "false", Failed: "false"})
	if t.checkErr(err, "cel: constant expressions parse") {
		got, _, err = none.read(ctx, obj)
		t.check(err == nil && got == "InProgress", "cel: no expression true is InProgress: %s %v", got, err)
	}

	// 100^5 iterations: stopped by the deadline (the interrupt check), not run out.
	list := "[" + strings.TrimSuffix(strings.Repeat("1,", 100), ",") + "]"
	bomb := list + ".all(a, " + list + ".all(b, " + list + ".all(c, " + list + ".all(d, " + list + ".all(e, a + b + c + d + e > 0)))))"
	slow, err := newFluxEvaluator(healthExprs{Current: bomb})
	if t.checkErr(err, "cel: the nested comprehension parses") {
		start := time.Now()
		_, _, err = slow.read(ctx, obj)
		took := time.Since(start)
		t.check(err != nil && errors.Is(err, context.DeadlineExceeded) || err != nil && strings.Contains(err.Error(), "interrupt"),
			"cel: 10^10 iterations are interrupted after %v: %v", took.Round(time.Millisecond), shorten(err))
		t.check(took < 3*celTimeout, "cel: the interrupt came within %v", 3*celTimeout)
	}
}

func hostileFixtures(t *tally) {
	dir, err := os.MkdirTemp("", "mcpgov-health-")
	if !t.checkErr(err, "fixtures: a scratch directory") {
		return
	}
	defer os.RemoveAll(dir)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.check(false, "fixtures: writing %s: %v", name, err)
		}
		return p
	}
	pad := `{"apiVersion": "mcpgov.io/v1alpha1", "kind": "Agent", "x": "` +
		strings.Repeat("a", maxFixtureBytes) + `"}`
	_, err = readObject(write("big.json", []byte(pad)))
	t.check(err != nil, "fixtures: over %d bytes is refused: %v", maxFixtureBytes, shorten(err))

	deep := `{"apiVersion": "mcpgov.io/v1alpha1", "kind": "Agent", "x": ` +
		strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `}`
	_, err = readObject(write("deep.json", []byte(deep)))
	t.check(err != nil, "fixtures: 200000 nested arrays are refused: %v", shorten(err))

	_, err = readObject(write("trunc.json", []byte(`{"apiVersion": "mcpgov.io/v1alpha1", "kind": "Ag`)))
	t.check(err != nil, "fixtures: truncated JSON is refused: %v", shorten(err))

	_, err = readObject(write("nokind.json", []byte(`{"apiVersion": "mcpgov.io/v1alpha1"}`)))
	t.check(err != nil, "fixtures: an object without kind is refused: %v", shorten(err))
}

func (t *tally) checkErr(err error, what string) bool {
	t.check(err == nil, "%s: %v", what, err)
	return err == nil
}

func shorten(err error) string {
	if err == nil {
		return "<nil>"
	}
	// The first line's end: the cause, after whatever the error quotes.
	s, _, _ := strings.Cut(err.Error(), "\n")
	if r := []rune(s); len(r) > 120 {
		s = "…" + string(r[len(r)-120:])
	}
	return s
}
