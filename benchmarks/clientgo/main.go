// Command clientgo-bench is the client-go anchor of benchmarks/bench_pipeline.py.
//
// It runs what a Go controller runs: a SharedInformerFactory's Pod informer,
// an event handler that adds each object's key to a named rate-limiting work
// queue, and one worker that reads the object from the lister. Once the cache
// has synced and the worker has drained the initial keys, it asks the
// benchmark server to release the watch events (POST /_bench/go) and times
// until the worker sees the last event's resourceVersion. It prints one JSON
// line: wall seconds, process CPU seconds (all threads) and peak RSS.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func maxRSSKB() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss
}

func main() {
	server := flag.String("server", "", "benchmark server URL")
	namespace := flag.String("namespace", "bench", "namespace to watch")
	objects := flag.Int("objects", 0, "objects in the initial list")
	lastKey := flag.String("last-key", "", "key of the last event's object")
	lastRV := flag.String("last-rv", "", "resourceVersion of the last event")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after")
	caFile := flag.String("ca", "", "CA file to trust (an https server)")
	flag.Parse()

	config := &rest.Config{Host: *server, QPS: 1e6, Burst: 1e6}
	config.TLSClientConfig.CAFile = *caFile
	config.ContentType = "application/json"
	config.AcceptContentTypes = "application/json"
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		panic(err)
	}
	gate, err := rest.HTTPClientFor(config) // trusts what the clientset trusts
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "bench"},
	)
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(*namespace))
	informer := factory.Core().V1().Pods()
	enqueue := func(obj interface{}) {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err == nil {
			queue.Add(key)
		}
	}
	_, err = informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, newObj interface{}) { enqueue(newObj) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		panic(err)
	}
	lister := informer.Lister()

	var reconciled atomic.Int64
	done := make(chan struct{})
	var finished atomic.Bool
	reconcile := func(key string) {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		pod, err := lister.Pods(ns).Get(name)
		if err == nil && key == *lastKey && pod.ResourceVersion == *lastRV && finished.CompareAndSwap(false, true) {
			close(done)
		}
		_ = corev1.PodRunning
	}
	go func() { // one worker
		for {
			key, shutdown := queue.Get()
			if shutdown {
				return
			}
			reconcile(key)
			queue.Forget(key)
			queue.Done(key)
			reconciled.Add(1)
		}
	}()

	started := time.Now()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		fmt.Fprintln(os.Stderr, "cache did not sync")
		os.Exit(1)
	}
	for reconciled.Load() < int64(*objects) || queue.Len() > 0 { // the initial keys, reconciled
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "initial keys not reconciled")
			os.Exit(1)
		}
		time.Sleep(time.Millisecond)
	}
	syncSeconds := time.Since(started).Seconds()
	rssSynced := maxRSSKB()

	cpu0 := cpuSeconds()
	t0 := time.Now()
	resp, err := gate.Post(*server+"/_bench/go", "application/json", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	select {
	case <-done:
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "the last event was not reconciled in time")
		os.Exit(1)
	}
	wall := time.Since(t0).Seconds()
	cpu := cpuSeconds() - cpu0
	out, _ := json.Marshal(map[string]interface{}{
		"wall": wall, "cpu": cpu, "sync_seconds": syncSeconds,
		"peak_rss_kb_synced": rssSynced, "peak_rss_kb": maxRSSKB(),
	})
	fmt.Println(string(out))
	queue.ShutDown()
	cancel()
}
