// Command kube-apiserver runs the upstream kube-apiserver from the
// k8s.io/kubernetes module pinned in ../../go.mod; it exists so that the
// pyinformers test control plane can be built from published Go modules.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
