// Command etcd runs a single-member etcd server through etcd's embed package,
// accepting etcd's usual command-line flags (--data-dir, --listen-client-urls,
// --advertise-client-urls, --listen-peer-urls, --unsafe-no-fsync, ...). It is
// what the pyinformers test control plane starts in front of kube-apiserver.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/pkg/v3/flags"
	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	cfg := embed.NewConfig()
	fs := flag.NewFlagSet("etcd", flag.ExitOnError)
	cfg.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		fail(err)
	}
	if fs.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments: %v", fs.Args()))
	}
	// AddFlags registers the URL lists as flag values; copy them into the config
	// the way etcd's own main does.
	cfg.ListenPeerUrls = flags.UniqueURLsFromFlag(fs, "listen-peer-urls")
	cfg.AdvertisePeerUrls = flags.UniqueURLsFromFlag(fs, "initial-advertise-peer-urls")
	cfg.ListenClientUrls = flags.UniqueURLsFromFlag(fs, "listen-client-urls")
	cfg.ListenClientHttpUrls = flags.UniqueURLsFromFlag(fs, "listen-client-http-urls")
	cfg.AdvertiseClientUrls = flags.UniqueURLsFromFlag(fs, "advertise-client-urls")
	cfg.ListenMetricsUrls = flags.UniqueURLsFromFlag(fs, "listen-metrics-urls")
	cfg.LogOutputs = flags.UniqueStringsFromFlag(fs, "log-outputs")
	fs.Visit(func(f *flag.Flag) { cfg.FlagsExplicitlySet[f.Name] = true })
	if !flags.IsSet(fs, "initial-cluster") {
		// a single member: itself, at the peer URLs it advertises
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	}
	if err := cfg.Validate(); err != nil {
		fail(err)
	}

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		fail(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-server.Server.ReadyNotify():
	case err := <-server.Err():
		fail(err)
	case <-stop:
		server.Close()
		return
	}
	select {
	case err := <-server.Err():
		server.Close()
		fail(err)
	case <-stop:
		server.Close()
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "etcd:", err)
	os.Exit(1)
}
