// mcpgov-projector stands in for the kubelet's ConfigMap volume in the e2e suite, which
// runs a real kube-apiserver but no kubelet. It watches one ConfigMap and projects it
// into a directory with the kubelet's own code: the configmap volume plugin's
// MakePayload (one file per key of data and binaryData, mode 0644: the API's default
// for a ConfigMap volume without items) and pkg/volume/util's AtomicWriter (timestamped
// directory, `..data` symlink swapped by rename, per-key symlinks `key -> ..data/key`).
//
// Like a non-optional ConfigMap volume of a running pod, a deleted ConfigMap leaves the
// last projection in place: the kubelet's remount fails to get the object and keeps the
// volume as it is.
//
// Stdout carries one line per event, for tests to wait on:
//
//	projected resourceVersion=N keys=a,b data=..2026_12_01_13_00_00.123456789
//	deleted resourceVersion=N kept=..2026_12_01_13_00_00.123456789
//	error resourceVersion=N: <why the write failed; the last projection stays>
//
// SIGTERM or SIGINT stops the watch, lets a write in progress finish and exits 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/pkg/volume/configmap"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

// sourceDigest is stamped by e2e/build-projector.sh (-ldflags -X), which asks the
// binary for it to decide whether its cached copy is current.
var sourceDigest = "unknown"

func main() {
	printDigest := flag.Bool("source-digest", false, "print the digest of the sources this binary was built from and exit")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server")
	namespace := flag.String("namespace", "", "namespace of the ConfigMap")
	name := flag.String("name", "", "name of the ConfigMap")
	dir := flag.String("dir", "", "directory to project into (created if missing), like a pod's volume directory")
	flag.Parse()
	if *printDigest {
		fmt.Println(sourceDigest)
		return
	}
	if *kubeconfig == "" || *namespace == "" || *name == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: mcpgov-projector --kubeconfig FILE --namespace NS --name CONFIGMAP --dir DIR")
		os.Exit(2)
	}
	if err := run(*kubeconfig, *namespace, *name, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgov-projector:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, name, dir string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	// The kubelet's emptyDir wrapper creates the volume directory before the writer runs.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	writer, err := volumeutil.NewAtomicWriter(dir, fmt.Sprintf("configmap %s/%s", namespace, name))
	if err != nil {
		return err
	}
	p := &projector{writer: writer, dir: dir}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// One object, watched the way the kubelet's watch-based ConfigMap manager does it: a
	// reflector (list, then watch; re-list after errors) with a name field selector.
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	informer := factory.Core().V1().ConfigMaps().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.project(obj) },
		UpdateFunc: func(_, obj any) { p.project(obj) },
		DeleteFunc: func(obj any) { p.deleted(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	// A write in progress finishes before we exit, so the directory is never half-swapped
	// by us (AtomicWriter's own steps are the only window, as on a node).
	p.mu.Lock()
	defer p.mu.Unlock()
	return nil
}

type projector struct {
	mu     sync.Mutex
	writer *volumeutil.AtomicWriter
	dir    string
	lastRV string
}

// defaultMode is what API defaulting puts in a ConfigMap volume source without one.
var defaultMode = v1.ConfigMapVolumeSourceDefaultMode

func (p *projector) project(obj any) {
	cm, ok := obj.(*v1.ConfigMap)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A re-list replays the object unchanged; one line per version seen.
	if cm.ResourceVersion == p.lastRV {
		return
	}
	p.lastRV = cm.ResourceVersion
	// No items, no defaultUser, not optional: the plain `configMap: {name: ...}` volume.
	payload, err := configmap.MakePayload(nil, cm, &defaultMode, nil, false)
	if err == nil {
		err = p.writer.Write(payload, nil)
	}
	if err != nil {
		fmt.Printf("error resourceVersion=%s: %s\n", cm.ResourceVersion, oneLine(err))
		return
	}
	keys := make([]string, 0, len(payload))
	for k := range payload {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("projected resourceVersion=%s keys=%s data=%s\n", cm.ResourceVersion, strings.Join(keys, ","), p.dataTarget())
}

func (p *projector) deleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	rv := ""
	if cm, ok := obj.(*v1.ConfigMap); ok {
		rv = cm.ResourceVersion
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Forget the version so that a re-created ConfigMap is projected again.
	p.lastRV = ""
	fmt.Printf("deleted resourceVersion=%s kept=%s\n", rv, p.dataTarget())
}

// dataTarget names the timestamped directory `..data` points at now.
func (p *projector) dataTarget() string {
	target, err := os.Readlink(filepath.Join(p.dir, "..data"))
	if err != nil {
		return "none"
	}
	return target
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
