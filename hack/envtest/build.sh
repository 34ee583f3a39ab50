#!/usr/bin/env bash
# Build etcd, kube-apiserver and kube-controller-manager from the Go modules
# pinned in hack/envtest/go.mod into a per-user cache laid out like
# controller-runtime's KUBEBUILDER_ASSETS:
#
#   ${PYINFORMERS_ENVTEST_HOME:-${XDG_DATA_HOME:-~/.local/share}/pyinformers-envtest}/k8s/<version>-<os>-<arch>/
#       etcd  kube-apiserver  kube-controller-manager  .stamp
#
# A rebuild happens only when the stamp (a hash of go.mod, go.sum, the main
# packages and the Go version) changes. The first build is slow (12-18 minutes
# on 2 cores, about 3 GB of Go build cache); later runs print "up to date".
# Prints the assets directory as its last line of output.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

command -v go >/dev/null || { echo "envtest: 'go' is not on PATH; install Go >= 1.26 to build the control plane" >&2; exit 1; }

k8s_version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"   # e.g. v1.36.3
version="${k8s_version#v}"
goos="$(go env GOOS)"; goarch="$(go env GOARCH)"
home="${PYINFORMERS_ENVTEST_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/pyinformers-envtest}"
assets="$home/k8s/$version-$goos-$goarch"
go_version="$(go env GOVERSION)"

# kube-openapi's JSON breaks under the encoding/json v2 default of Go 1.27+
# (/openapi/v2 answers 503); keep the v1 implementation there.
go_minor="$(echo "$go_version" | sed -E 's/^go1\.([0-9]+).*/\1/')"
if [[ "$go_minor" =~ ^[0-9]+$ ]] && (( go_minor >= 27 )); then
    export GOEXPERIMENT="${GOEXPERIMENT:+$GOEXPERIMENT,}nojsonv2"
fi

stamp="$( { cat go.mod go.sum cmd/*/main.go build.sh; echo "$go_version ${GOEXPERIMENT:-}"; } | sha256sum | cut -c1-16)"
binaries=(etcd kube-apiserver kube-controller-manager)

mkdir -p "$assets"
exec 9>"$assets/.lock"
flock 9   # one builder per assets directory; a second caller waits, then finds it up to date

up_to_date() {
    [[ -f "$assets/.stamp" && "$(cat "$assets/.stamp")" == "$stamp" ]] || return 1
    for b in "${binaries[@]}"; do [[ -x "$assets/$b" ]] || return 1; done
}
if up_to_date; then
    echo "envtest: binaries for Kubernetes $version are up to date"
    echo "$assets"
    exit 0
fi

echo "envtest: building Kubernetes $version control-plane binaries with $go_version into $assets"
echo "envtest: a first build takes 12-18 minutes on 2 cores; later builds reuse the Go build cache"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    major="${version%%.*}"; minor="${version#*.}"; minor="${minor%%.*}"
    ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
rm -f "$assets/.stamp"
total_start=$SECONDS
for b in "${binaries[@]}"; do
    start=$SECONDS
    echo "envtest: [$b] building ..."
    # a heartbeat, so a long build does not look hung
    ( while sleep 60; do echo "envtest: [$b] still building ($(( SECONDS - start ))s)"; done ) &
    beat=$!
    status=0
    nice -n "${ENVTEST_NICE:-10}" go build -trimpath -ldflags "$ldflags" -o "$assets/.$b.tmp" "./cmd/$b" || status=$?
    kill "$beat" 2>/dev/null; wait "$beat" 2>/dev/null || true
    if (( status != 0 )); then
        rm -f "$assets/.$b.tmp"
        echo "envtest: [$b] build FAILED" >&2
        exit "$status"
    fi
    mv -f "$assets/.$b.tmp" "$assets/$b"
    echo "envtest: [$b] built in $(( SECONDS - start ))s"
done
echo "$stamp" > "$assets/.stamp"
echo "envtest: all binaries built in $(( SECONDS - total_start ))s"
echo "$assets"
