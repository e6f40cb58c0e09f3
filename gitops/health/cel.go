package main

// Flux's healthCheckExprs (RFC-0009, kustomize-controller 2.5+), rebuilt from what
// fluxcd/pkg/runtime/cel does, on cel-go:
//
//   - each expression is parsed, not type-checked (CRDs need not have the five usual
//     top-level fields), in an environment with homogeneous aggregate literals, eager
//     declaration validation, UTC as the default time zone, cross-type numeric
//     comparisons, optional types and the strings, sets and encoders extensions;
//     programs are optimised and check for interruption every 100 iterations;
//   - the variables are the object's top-level fields (apiVersion, kind, metadata, spec,
//     status);
//   - status.observedGeneration present and unequal to metadata.generation is
//     InProgress before any expression runs; then inProgress, failed, current in that
//     order, the first true one decides; none true is InProgress;
//   - an evaluation error (a missing field, a non-bool result) makes kstatus' generic
//     status reader report Unknown, on which Flux keeps waiting until its timeout.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A bound for the harness (Flux uses the reconcile's context).
const celTimeout = time.Second

type healthExprs struct {
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
	Current    string `json:"current"`
}

type fluxEvaluator struct {
	steps []fluxStep
}

type fluxStep struct {
	status string
	prog   cel.Program
	expr   string
}

func newFluxEvaluator(e healthExprs) (*fluxEvaluator, error) {
	if e.Current == "" {
		return nil, errors.New("current is required")
	}
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		return nil, err
	}
	f := &fluxEvaluator{}
	for _, s := range []struct{ status, expr string }{
		{"InProgress", e.InProgress}, {"Failed", e.Failed}, {"Current", e.Current},
	} {
		if s.expr == "" {
			continue // inProgress and failed are optional
		}
		ast, iss := env.Parse(s.expr)
		if iss != nil && iss.Err() != nil {
			return nil, fmt.Errorf("parsing %q: %w", s.expr, iss.Err())
		}
		prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
		if err != nil {
			return nil, fmt.Errorf("program for %q: %w", s.expr, err)
		}
		f.steps = append(f.steps, fluxStep{status: s.status, prog: prog, expr: s.expr})
	}
	return f, nil
}

// evaluate is the status function Flux hands kstatus' generic status reader.
func (f *fluxEvaluator) evaluate(ctx context.Context, u *unstructured.Unstructured) (string, error) {
	observed, ok, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if err != nil {
		return "", err
	}
	if ok {
		generation, ok, err := unstructured.NestedInt64(u.Object, "metadata", "generation")
		if err != nil {
			return "", err
		}
		if ok && generation != observed {
			return "InProgress", nil
		}
	}
	for _, s := range f.steps {
		val, _, err := s.prog.ContextEval(ctx, u.Object)
		if err != nil {
			return "", fmt.Errorf("evaluating %q: %w", s.expr, err)
		}
		b, ok := val.(types.Bool)
		if !ok {
			return "", fmt.Errorf("%q is not a boolean: %v", s.expr, val)
		}
		if b {
			return s.status, nil
		}
	}
	return "InProgress", nil
}

// read is what the generic status reader makes of evaluate: an error is Unknown (with
// the error kept as detail), except the context's own, which aborts the poll.
func (f *fluxEvaluator) read(ctx context.Context, u *unstructured.Unstructured) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, celTimeout)
	defer cancel()
	status, err := f.evaluate(ctx, u)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return "", "", err
		}
		return "Unknown", err.Error(), nil
	}
	return status, "", nil
}
