// Command gocontroller is the Go anchor of benchmarks/bench_e2e.py: a controller
// built on client-go the way kubernetes/sample-controller is.
//
// Shared informers for Foos (samplecontroller.k8s.io/v1alpha1, small typed
// structs of our own read through a typed REST client, as the sample's
// generated clientset does) and Deployments, a rate-limiting work queue, two
// workers; the sync handler creates or updates the Foo's Deployment and writes
// the Foo's status subresource, and an EventRecorder records "Synced" on the
// Foo, as the sample does. It does what samples.sample_controller does, write
// for write: the replicas fix sends the cached Deployment's resourceVersion,
// and the status write is skipped when the status already says the right
// thing (the Go sample writes it every time).
//
// Flags choose client-go's client-side throttle (-qps 0: client-go's default,
// 5 QPS / burst 10; -qps -1: off; otherwise the given QPS and -burst) and the
// content type of the built-in kinds (-protobuf: Deployments and Events in
// protobuf, as kube-controller-manager talks; Foos are JSON, as every custom
// resource is). Once its caches have synced it prints "synced" on stdout; it
// runs until SIGTERM or SIGINT.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// ---------------------------------------------------------------------------- the Foo types

var fooGV = schema.GroupVersion{Group: "samplecontroller.k8s.io", Version: "v1alpha1"}

type FooSpec struct {
	DeploymentName string `json:"deploymentName"`
	Replicas       *int32 `json:"replicas,omitempty"`
}

type FooStatus struct {
	AvailableReplicas *int32 `json:"availableReplicas,omitempty"`
}

type Foo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              FooSpec   `json:"spec"`
	Status            FooStatus `json:"status"`
}

type FooList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Foo `json:"items"`
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (in *Foo) DeepCopy() *Foo {
	out := &Foo{TypeMeta: in.TypeMeta}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = FooSpec{DeploymentName: in.Spec.DeploymentName, Replicas: copyInt32(in.Spec.Replicas)}
	out.Status = FooStatus{AvailableReplicas: copyInt32(in.Status.AvailableReplicas)}
	return out
}

func (in *Foo) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *FooList) DeepCopyObject() runtime.Object {
	out := &FooList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Foo, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopy()
	}
	return out
}

// fooClient is the part of the sample's generated clientset the controller uses.
type fooClient struct {
	rest   rest.Interface
	params runtime.ParameterCodec
}

func newFooClient(base *rest.Config) (*fooClient, error) {
	s := runtime.NewScheme()
	s.AddKnownTypes(fooGV, &Foo{}, &FooList{})
	metav1.AddToGroupVersion(s, fooGV)
	config := rest.CopyConfig(base)
	config.GroupVersion = &fooGV
	config.APIPath = "/apis"
	config.ContentType = runtime.ContentTypeJSON // custom resources are JSON only
	config.AcceptContentTypes = runtime.ContentTypeJSON
	config.NegotiatedSerializer = serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(s)}
	client, err := rest.RESTClientFor(config)
	if err != nil {
		return nil, err
	}
	return &fooClient{rest: client, params: runtime.NewParameterCodec(s)}, nil
}

func (c *fooClient) List(ctx context.Context, opts metav1.ListOptions) (*FooList, error) {
	out := &FooList{}
	err := c.rest.Get().Resource("foos").VersionedParams(&opts, c.params).Do(ctx).Into(out)
	return out, err
}

func (c *fooClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.rest.Get().Resource("foos").VersionedParams(&opts, c.params).Watch(ctx)
}

func (c *fooClient) UpdateStatus(ctx context.Context, foo *Foo) (*Foo, error) {
	out := &Foo{}
	err := c.rest.Put().Namespace(foo.Namespace).Resource("foos").Name(foo.Name).SubResource("status").
		Body(foo).Do(ctx).Into(out)
	return out, err
}

// ---------------------------------------------------------------------------- the controller

type Controller struct {
	kube        kubernetes.Interface
	foos        *fooClient
	fooLister   cache.Indexer
	fooSynced   cache.InformerSynced
	deployments appslisters.DeploymentLister
	depSynced   cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	recorder    record.EventRecorder
}

func NewController(kube kubernetes.Interface, foos *fooClient, depInformer kubeinformers.SharedInformerFactory,
	fooInformer cache.SharedIndexInformer, recorder record.EventRecorder) *Controller {
	deployments := depInformer.Apps().V1().Deployments()
	c := &Controller{
		kube:        kube,
		foos:        foos,
		fooLister:   fooInformer.GetIndexer(),
		fooSynced:   fooInformer.HasSynced,
		deployments: deployments.Lister(),
		depSynced:   deployments.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "Foos"},
		),
		recorder: recorder,
	}
	_, _ = fooInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueFoo,
		UpdateFunc: func(_, newObj interface{}) { c.enqueueFoo(newObj) },
	})
	_, _ = deployments.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.handleObject,
		UpdateFunc: func(oldObj, newObj interface{}) {
			if oldObj.(*appsv1.Deployment).ResourceVersion == newObj.(*appsv1.Deployment).ResourceVersion {
				return // a resync
			}
			c.handleObject(newObj)
		},
		DeleteFunc: c.handleObject,
	})
	return c
}

func (c *Controller) enqueueFoo(obj interface{}) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// handleObject enqueues the Foo that controls a Deployment.
func (c *Controller) handleObject(obj interface{}) {
	object, ok := obj.(metav1.Object)
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if object, ok = tombstone.Obj.(metav1.Object); !ok {
			return
		}
	}
	owner := metav1.GetControllerOf(object)
	if owner == nil || owner.Kind != "Foo" {
		return
	}
	if _, exists, err := c.fooLister.GetByKey(object.GetNamespace() + "/" + owner.Name); err == nil && exists {
		c.queue.Add(object.GetNamespace() + "/" + owner.Name)
	}
}

func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.fooSynced, c.depSynced) {
		return fmt.Errorf("failed to wait for caches to sync")
	}
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.runWorker, time.Second)
	}
	fmt.Println("synced")
	<-ctx.Done()
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.syncHandler(ctx, key); err != nil {
		c.queue.AddRateLimited(key)
		utilruntime.HandleError(fmt.Errorf("error syncing %q: %w, requeuing", key, err))
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) syncHandler(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	obj, exists, err := c.fooLister.GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		return nil // deleted; its Deployment goes with it
	}
	foo := obj.(*Foo)
	if foo.Spec.DeploymentName == "" {
		return nil
	}
	deployment, err := c.deployments.Deployments(namespace).Get(foo.Spec.DeploymentName)
	if errors.IsNotFound(err) {
		deployment, err = c.kube.AppsV1().Deployments(namespace).Create(ctx, newDeployment(foo), metav1.CreateOptions{})
		if err == nil {
			log.Printf("created deployment %s/%s for foo %s", namespace, foo.Spec.DeploymentName, key)
		}
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(deployment, foo) {
		msg := fmt.Sprintf("Resource %q already exists and is not managed by Foo", deployment.Name)
		c.recorder.Event(foo, corev1.EventTypeWarning, "ErrResourceExists", msg)
		return fmt.Errorf("%s", msg)
	}
	if foo.Spec.Replicas != nil && *foo.Spec.Replicas != replicasOf(deployment) {
		log.Printf("foo %s replicas: %d, deployment replicas: %d", name, *foo.Spec.Replicas, replicasOf(deployment))
		desired := newDeployment(foo)
		desired.ResourceVersion = deployment.ResourceVersion
		deployment, err = c.kube.AppsV1().Deployments(namespace).Update(ctx, desired, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
	}
	if err := c.updateFooStatus(ctx, foo, deployment); err != nil {
		return err
	}
	c.recorder.Event(foo, corev1.EventTypeNormal, "Synced", "Foo synced successfully")
	return nil
}

func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func (c *Controller) updateFooStatus(ctx context.Context, foo *Foo, deployment *appsv1.Deployment) error {
	available := deployment.Status.AvailableReplicas
	if foo.Status.AvailableReplicas != nil && *foo.Status.AvailableReplicas == available {
		return nil // the Python sample skips the no-op write too
	}
	fooCopy := foo.DeepCopy()
	fooCopy.Status.AvailableReplicas = &available
	_, err := c.foos.UpdateStatus(ctx, fooCopy)
	return err
}

func newDeployment(foo *Foo) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx", "controller": foo.Name}
	replicas := int32(1)
	if foo.Spec.Replicas != nil {
		replicas = *foo.Spec.Replicas
	}
	selector := map[string]string{"app": "nginx", "controller": foo.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      foo.Spec.DeploymentName,
			Namespace: foo.Namespace,
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(foo, fooGV.WithKind("Foo")),
			},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
			},
		},
	}
}

// ---------------------------------------------------------------------------- main

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path of a kubeconfig")
	qps := flag.Float64("qps", 0, "client-side QPS: 0 client-go's default (5, burst 10), -1 off")
	burst := flag.Int("burst", 0, "client-side burst (with -qps > 0)")
	protobuf := flag.Bool("protobuf", false, "talk protobuf for built-in kinds (Deployments, Events)")
	workers := flag.Int("workers", 2, "worker goroutines")
	writeBench := flag.Int("write-bench", 0, "instead of running: time N writes of each kind (see writeBenchmark)")
	namespace := flag.String("namespace", "default", "namespace of -write-bench")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("kubeconfig: %v", err)
	}
	switch {
	case *qps < 0:
		config.QPS = -1 // client-go: a negative QPS turns the client-side rate limiter off
	case *qps > 0:
		config.QPS = float32(*qps)
		config.Burst = *burst
	}
	config.UserAgent = "gocontroller"
	kubeConfig := rest.CopyConfig(config)
	if *protobuf {
		kubeConfig.ContentType = runtime.ContentTypeProtobuf
		kubeConfig.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	} else {
		kubeConfig.ContentType = runtime.ContentTypeJSON
		kubeConfig.AcceptContentTypes = runtime.ContentTypeJSON
	}
	kube, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		log.Fatalf("clientset: %v", err)
	}
	if *writeBench > 0 {
		writeBenchmark(kube, *namespace, *writeBench)
		return
	}
	foos, err := newFooClient(config)
	if err != nil {
		log.Fatalf("foo client: %v", err)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	eventScheme := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(eventScheme))
	eventScheme.AddKnownTypes(fooGV, &Foo{}, &FooList{})
	recorder := broadcaster.NewRecorder(eventScheme, corev1.EventSource{Component: "sample-controller"})

	kubeFactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	fooInformer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return foos.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return foos.Watch(ctx, opts)
		},
	}, &Foo{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})

	controller := NewController(kube, foos, kubeFactory, fooInformer, recorder)
	kubeFactory.Start(ctx.Done())
	go fooInformer.RunWithContext(ctx)
	if err := controller.Run(ctx, *workers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	broadcaster.Shutdown()
}

// ---------------------------------------------------------------------------- -write-bench

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// writeBenchmark does what benchmarks/writer.py does, with the clientset: n Deployments created,
// replaced, their status written, merge-patched and deleted, one request at a time, after a warm-up;
// it prints the CPU and wall microseconds per write of each kind as one JSON line.
func writeBenchmark(kube kubernetes.Interface, namespace string, n int) {
	ctx := context.Background()
	client := kube.AppsV1().Deployments(namespace)
	run := func(prefix string, count int) map[string]map[string]float64 {
		last := make([]*appsv1.Deployment, count)
		out := map[string]map[string]float64{}
		foo := &Foo{} // the Deployments' controller, as in benchmarks/writer.py (it need not exist)
		foo.UID = "4f0c8d6e-0000-4000-8000-00000000e2e0"
		ops := []struct {
			name string
			fn   func(i int, name string) (*appsv1.Deployment, error)
		}{
			{"create", func(i int, name string) (*appsv1.Deployment, error) {
				foo.Name, foo.Namespace, foo.Spec.DeploymentName = name, namespace, name
				return client.Create(ctx, newDeployment(foo), metav1.CreateOptions{})
			}},
			{"update", func(i int, name string) (*appsv1.Deployment, error) {
				two := int32(2)
				foo.Name, foo.Namespace, foo.Spec.DeploymentName, foo.Spec.Replicas = name, namespace, name, &two
				d := newDeployment(foo)
				d.ResourceVersion = last[i].ResourceVersion
				foo.Spec.Replicas = nil
				return client.Update(ctx, d, metav1.UpdateOptions{})
			}},
			{"status", func(i int, name string) (*appsv1.Deployment, error) {
				d := last[i].DeepCopy()
				d.Status.ObservedGeneration, d.Status.Replicas = 1, 0
				return client.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			}},
			{"patch", func(i int, name string) (*appsv1.Deployment, error) {
				return client.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{})
			}},
			{"delete", func(i int, name string) (*appsv1.Deployment, error) {
				return last[i], client.Delete(ctx, name, metav1.DeleteOptions{})
			}},
		}
		for _, op := range ops {
			cpu0, wall0 := cpuSeconds(), time.Now()
			for i := 0; i < count; i++ {
				d, err := op.fn(i, fmt.Sprintf("%s-%05d", prefix, i))
				if err != nil {
					log.Fatalf("%s: %v", op.name, err)
				}
				last[i] = d
			}
			out[op.name] = map[string]float64{
				"cpu_us":  (cpuSeconds() - cpu0) / float64(count) * 1e6,
				"wall_us": float64(time.Since(wall0).Microseconds()) / float64(count),
			}
		}
		return out
	}
	run("warm", 20)
	result, _ := json.Marshal(map[string]interface{}{"n": n, "ops": run("timed", n)})
	fmt.Println(string(result))
}
