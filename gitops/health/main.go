// Command mcpgov-health checks gitops/'s health definitions for the mcpgov.io kinds with
// the libraries Argo CD and Flux evaluate them with, over the captured status fixtures of
// gitops/test/ (expected.json says what each tool should conclude):
//
//	mcpgov-health lua GITOPS_DIR      Argo CD: the argocd-cm health scripts in gopher-lua,
//	                                  with the libraries Argo CD opens for them
//	mcpgov-health kstatus GITOPS_DIR  Flux's wait: kstatus (sigs.k8s.io/cli-utils) Compute
//	mcpgov-health cel GITOPS_DIR      Flux 2.5+ healthCheckExprs in cel-go, evaluated as
//	                                  kustomize-controller does
//	mcpgov-health selftest            the harness itself: Argo CD's sandbox and limits,
//	                                  hostile scripts, fixtures and expressions
//	mcpgov-health versions            the module versions this binary was built from
//	mcpgov-health --source-digest     the digest of the sources it was built from
//
// Each check prints `ok   …` or `FAIL …` and, last, `RESULT <name> passed=N failed=N`
// (gitops/test.sh adds those up). Test infrastructure only: built and cached by
// gitops/build-health.sh.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
)

// Set with -ldflags -X by build-health.sh: the cache key the build script asks for.
var sourceDigest = "unset"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch cmd := os.Args[1]; cmd {
	case "--source-digest":
		fmt.Println(sourceDigest)
	case "versions":
		versions()
	case "selftest":
		os.Exit(selftest())
	case "lua", "kstatus", "cel":
		if len(os.Args) != 3 {
			usage()
		}
		os.Exit(suite(cmd, os.Args[2]))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: mcpgov-health lua|kstatus|cel GITOPS_DIR | selftest | versions | --source-digest")
	os.Exit(2)
}

// The implementations under test, as linked into this binary.
func versions() {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Println("no build information")
		return
	}
	fmt.Printf("go %s\n", info.GoVersion)
	for _, m := range info.Deps {
		switch m.Path {
		case "github.com/yuin/gopher-lua", "sigs.k8s.io/cli-utils", "cel.dev/cel-go",
			"k8s.io/apimachinery":
			fmt.Printf("%s %s\n", m.Path, m.Version)
		}
	}
}

// tally prints one line per check and the closing RESULT line.
type tally struct {
	name           string
	passed, failed int
}

func (t *tally) check(ok bool, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if ok {
		t.passed++
		fmt.Println("ok   " + line)
	} else {
		t.failed++
		fmt.Println("FAIL " + line)
	}
}

func (t *tally) finish() int {
	fmt.Printf("RESULT %s passed=%d failed=%d\n", t.name, t.passed, t.failed)
	if t.failed > 0 {
		return 1
	}
	return 0
}
