package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Bounds on what is read: every file here is a few KiB; anything far larger is a
// mistake or an attack on the harness, and is refused rather than parsed.
const (
	maxFixtureBytes  = 1 << 20
	maxManifestBytes = 1 << 20
)

// gitops/test/expected.json.
type manifest struct {
	// The healthCheckExprs docs/gitops.md proposes (the same for the four kinds).
	FluxHealthCheckExprs healthExprs `json:"fluxHealthCheckExprs"`
	Cases                []testCase  `json:"cases"`
}

type testCase struct {
	Fixture string `json:"fixture"`
	Argocd  struct {
		Status          string  `json:"status"`
		Message         *string `json:"message"`
		MessageContains *string `json:"messageContains"`
	} `json:"argocd"`
	Kstatus struct {
		Status  string  `json:"status"`
		Message *string `json:"message"`
	} `json:"kstatus"`
	FluxExprs string `json:"fluxExprs"`
}

// readBounded reads a file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return data, nil
}

func readManifest(root string) (*manifest, error) {
	data, err := readBounded(filepath.Join(root, "test", "expected.json"), maxManifestBytes)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("expected.json: %w", err)
	}
	if len(m.Cases) == 0 {
		return nil, fmt.Errorf("expected.json lists no cases")
	}
	return &m, nil
}

// readObject decodes a fixture the way client-go hands objects to Argo CD and Flux:
// unstructured JSON, integers as int64.
func readObject(path string) (*unstructured.Unstructured, error) {
	data, err := readBounded(path, maxFixtureBytes)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return u, nil
}

// healthScripts reads argocd/argocd-cm-patch.yaml, what users merge into argocd-cm:
// the scripts under test are those keys, not the health.lua sources (check_static.py
// checks the two agree).
func healthScripts(root string) (map[string]string, error) {
	data, err := readBounded(filepath.Join(root, "argocd", "argocd-cm-patch.yaml"), maxManifestBytes)
	if err != nil {
		return nil, err
	}
	// Strict: an unknown field or a key given twice (YAML keeps the last) is an error.
	var cm struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   map[string]any    `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		return nil, fmt.Errorf("argocd-cm-patch.yaml: %w", err)
	}
	if cm.Kind != "ConfigMap" {
		return nil, fmt.Errorf("argocd-cm-patch.yaml: kind %q, want ConfigMap", cm.Kind)
	}
	return cm.Data, nil
}

// argocdKey is the argocd-cm key Argo CD reads a custom health check from for an
// object: resource.customizations.health.<group>_<kind> (group/kind with the slash
// replaced, as ConfigMap keys cannot hold one).
func argocdKey(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	key := gvk.Kind
	if gvk.Group != "" {
		key = gvk.Group + "/" + gvk.Kind
	}
	return "resource.customizations.health." + strings.ReplaceAll(key, "/", "_")
}

// suite runs one checker over every fixture of expected.json.
func suite(name, root string) int {
	t := &tally{name: name}
	m, err := readManifest(root)
	if err != nil {
		t.check(false, "%v", err)
		return t.finish()
	}
	var scripts map[string]string
	var flux *fluxEvaluator
	switch name {
	case "lua":
		if scripts, err = healthScripts(root); err != nil {
			t.check(false, "%v", err)
			return t.finish()
		}
	case "cel":
		if flux, err = newFluxEvaluator(m.FluxHealthCheckExprs); err != nil {
			t.check(false, "healthCheckExprs: %v", err)
			return t.finish()
		}
	}
	for _, c := range m.Cases {
		u, err := readObject(filepath.Join(root, "test", "fixtures", filepath.Base(c.Fixture)))
		if err != nil {
			t.check(false, "%s: %v", c.Fixture, err)
			continue
		}
		switch name {
		case "lua":
			checkArgo(t, c, u, scripts)
		case "kstatus":
			checkKstatus(t, c, u)
		case "cel":
			checkFlux(t, c, u, flux)
		}
	}
	return t.finish()
}

func checkArgo(t *tally, c testCase, u *unstructured.Unstructured, scripts map[string]string) {
	key := argocdKey(u)
	script, ok := scripts[key]
	if !ok {
		t.check(false, "%s: argocd-cm-patch.yaml has no %s", c.Fixture, key)
		return
	}
	hs, err := argoHealth(context.Background(), script, u.Object)
	if err != nil {
		t.check(false, "%s: %v", c.Fixture, err)
		return
	}
	var problems []string
	if hs.Status != c.Argocd.Status {
		problems = append(problems, fmt.Sprintf("status %s, want %s", hs.Status, c.Argocd.Status))
	}
	if w := c.Argocd.Message; w != nil && hs.Message != *w {
		problems = append(problems, fmt.Sprintf("message\n       got:  %s\n       want: %s", hs.Message, *w))
	}
	if w := c.Argocd.MessageContains; w != nil && !strings.Contains(hs.Message, *w) {
		problems = append(problems, fmt.Sprintf("message\n       got:  %s\n       want it to contain: %s", hs.Message, *w))
	}
	if c.Argocd.Message == nil && c.Argocd.MessageContains == nil {
		problems = append(problems, "expected.json says nothing of the message")
	}
	if len(problems) > 0 {
		t.check(false, "%s: %s", c.Fixture, strings.Join(problems, "; "))
		return
	}
	t.check(true, "%s: %s (%s)", c.Fixture, hs.Status, hs.Message)
}

func checkKstatus(t *tally, c testCase, u *unstructured.Unstructured) {
	status, message, err := kstatusOf(u)
	if err != nil {
		t.check(false, "kstatus %s: %v", c.Fixture, err)
		return
	}
	var problems []string
	if status != c.Kstatus.Status {
		problems = append(problems, fmt.Sprintf("status %s, want %s", status, c.Kstatus.Status))
	}
	if w := c.Kstatus.Message; w != nil && message != *w {
		problems = append(problems, fmt.Sprintf("message %q, want %q", message, *w))
	}
	if len(problems) > 0 {
		t.check(false, "kstatus %s: %s", c.Fixture, strings.Join(problems, "; "))
		return
	}
	t.check(true, "kstatus %s: %s (%s)", c.Fixture, status, message)
}

func checkFlux(t *tally, c testCase, u *unstructured.Unstructured, flux *fluxEvaluator) {
	status, detail, err := flux.read(context.Background(), u)
	if err != nil {
		t.check(false, "healthCheckExprs %s: %v", c.Fixture, err)
		return
	}
	if detail != "" {
		detail = " (" + detail + ")"
	}
	if status != c.FluxExprs {
		t.check(false, "healthCheckExprs %s: %s%s, want %s", c.Fixture, status, detail, c.FluxExprs)
		return
	}
	t.check(true, "healthCheckExprs %s: %s%s", c.Fixture, status, detail)
}
