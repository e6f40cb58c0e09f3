package main

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// kstatusOf is what Flux's `wait` (and kubectl-style pollers) conclude for a custom
// resource: kstatus' generic rules, as the library computes them.
func kstatusOf(u *unstructured.Unstructured) (string, string, error) {
	res, err := status.Compute(u)
	if err != nil {
		return "", "", err
	}
	return string(res.Status), res.Message, nil
}
