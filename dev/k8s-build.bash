# dev/k8s-build.bash: the one-time builds of `dev/k8s` (sourced by it), cached outside the
# checkout and rebuilt only when missing:
# - kube-apiserver, kubelet, kube-scheduler and kube-controller-manager 1.20.2, in one
#   `make` of Debian bookworm's kubernetes source package (fetched through a private apt
#   state), with Debian's newer reflect2 and json-iterator swapped into vendor/ (the
#   vendored reflect2 crashes under Go >= 1.18) and the kubelet's negative oom_score_adj
#   values set to 0 (no process here may set one);
# - Volcano v1.5.1's controller manager, scheduler and webhook manager, with its CRDs and
#   its chart's scheduler configuration.

# fetch_source: the Debian source package's files into $CACHE/src, via a private apt state
# (deb-src entries made from the machine's Debian sources; /etc/apt is not touched).
fetch_source() {
  local orig=$CACHE/src/kubernetes_${SRC_VERSION%-*}.orig.tar.gz apt=$CACHE/apt
  [ -s "$orig" ] && return 0
  mkdir -p "$CACHE/src" "$apt/sources.list.d" "$apt/lists/partial" "$apt/cache/archives/partial"
  local f found=
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    grep -q '^URIs:.*debian' "$f" || continue
    sed 's/^Types:.*$/Types: deb-src/' "$f" >"$apt/sources.list.d/${f##*/}"
    found=1
  done
  if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb \(.*debian.*\)$/deb-src \1/p' /etc/apt/sources.list >"$apt/sources.list.d/debian-src.list"
    [ -s "$apt/sources.list.d/debian-src.list" ] && found=1
  fi
  [ -n "$found" ] || die "no Debian apt source found in /etc/apt to derive deb-src entries from"
  local o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/sources.list.d"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
  say "fetching the kubernetes $SRC_VERSION source package (35 MB)"
  apt-get "${o[@]}" update >"$LOG/apt-source.log" 2>&1 || die "apt-get update (deb-src) failed; read $LOG/apt-source.log"
  (cd "$CACHE/src" && apt-get "${o[@]}" source --download-only "kubernetes=$SRC_VERSION") \
    >>"$LOG/apt-source.log" 2>&1 || die "apt-get source kubernetes=$SRC_VERSION failed; read $LOG/apt-source.log"
  [ -s "$orig" ] || die "apt-get source gave no $orig; read $LOG/apt-source.log"
}

# The Kubernetes binaries one `make` builds from the source, all cached side by side.
KUBE_BINARIES=(kube-apiserver kubelet kube-scheduler kube-controller-manager)

# binaries_built: every Kubernetes binary is in the cache.
binaries_built() {
  local b
  for b in "${KUBE_BINARIES[@]}"; do [ -x "$CACHE/$SRC_VERSION/$b" ] || return 1; done
}

# build, build_locked: the Kubernetes binaries from the source, with the source's make, in
# one `make WHAT=...` into $CACHE/$SRC_VERSION/. The tree and Go's caches live in a scratch
# directory that is removed afterwards (1.5 GB).
build() {
  binaries_built && return 0
  mkdir -p "$CACHE/$SRC_VERSION"
  # One build at a time: a second `up` meanwhile waits for the first build's binaries.
  (
    if ! flock -n 9; then
      say "another dev/k8s is building Kubernetes; waiting for it"
      flock 9
    fi
    binaries_built || build_locked
  ) 9>"$CACHE/$SRC_VERSION/build.lock"
}

# patch_kubelet TREE: no process here may set a negative oom_score_adj (runc then fails to
# create any container), and dockershim gives every pod sandbox -998 and the kubelet's QoS
# policy every Guaranteed (and critical) container a negative score too: both become 0.
patch_kubelet() {
  local tree=$1 sandbox=pkg/kubelet/dockershim/docker_sandbox.go policy=pkg/kubelet/qos/policy.go
  sed -i 's/^\(\s*defaultSandboxOOMAdj\s\+int\s*=\s*\)-[0-9]\+/\10/' "$tree/$sandbox"
  sed -i 's/^\(\s*\)return guaranteedOOMScoreAdj$/\1return 0/' "$tree/$policy"
  grep -Eq '^\s*defaultSandboxOOMAdj\s+int\s*=\s*0\b' "$tree/$sandbox" ||
    die "could not patch defaultSandboxOOMAdj in $sandbox (has the source changed?)"
  ! grep -q 'return guaranteedOOMScoreAdj$' "$tree/$policy" && grep -q '^\s*return 0$' "$tree/$policy" ||
    die "could not patch the guaranteedOOMScoreAdj returns in $policy (has the source changed?)"
}

build_locked() {
  fetch_source
  local work=$CACHE/$SRC_VERSION/build tree gocode=/usr/share/gocode/src/github.com b what=()
  rm -rf "$work"
  mkdir -p "$work"
  say "unpacking the source"
  tar xzf "$CACHE/src/kubernetes_${SRC_VERSION%-*}.orig.tar.gz" -C "$work"
  tree=$(echo "$work"/kubernetes-*)
  [ -d "$tree/vendor" ] || die "$tree has no vendor/ directory"
  rm -rf "$tree/vendor/github.com/modern-go/reflect2" "$tree/vendor/github.com/json-iterator/go"
  cp -rL "$gocode/modern-go/reflect2" "$tree/vendor/github.com/modern-go/reflect2"
  cp -rL "$gocode/json-iterator/go" "$tree/vendor/github.com/json-iterator/go"
  patch_kubelet "$tree"
  cat >"$work/version" <<VERSION
KUBE_GIT_COMMIT=''
KUBE_GIT_TREE_STATE='archive'
KUBE_GIT_VERSION='$K8S_VERSION'
KUBE_GIT_MAJOR='1'
KUBE_GIT_MINOR='20'
VERSION
  for b in "${KUBE_BINARIES[@]}"; do what+=("cmd/$b"); done
  say "building ${KUBE_BINARIES[*]} $K8S_VERSION (once; 10 to 20 min on 2 busy cores; log: $LOG/build.log)"
  local start=$SECONDS
  if ! (cd "$tree" && env GOFLAGS= CGO_ENABLED=0 GOCACHE="$work/gocache" HOME="$work" \
    KUBE_GIT_VERSION_FILE="$work/version" nice -n 10 make WHAT="${what[*]}") >"$LOG/build.log" 2>&1; then
    die "building Kubernetes failed; read $LOG/build.log (tree kept in $work)"
  fi
  local out
  for b in "${KUBE_BINARIES[@]}"; do
    out=$(find "$tree/_output" -type f -name "$b" -perm -u+x | head -n1)
    [ -n "$out" ] || die "make gave no $b binary; read $LOG/build.log"
    cp "$out" "$CACHE/$SRC_VERSION/$b.tmp" && mv "$CACHE/$SRC_VERSION/$b.tmp" "$CACHE/$SRC_VERSION/$b"
  done
  rm -rf "$work"
  say "built ${KUBE_BINARIES[*]} into $CACHE/$SRC_VERSION in $((SECONDS - start)) s"
}

# Volcano v1.5.1 (the last release whose CRDs a 1.20 API server accepts), built from its
# source once: its controller manager, scheduler and admission webhook, its CRDs and its
# chart's scheduler configuration, cached in $VC_CACHE. The source is the archive named by
# TORCHX_DEV_K8S_VOLCANO_ARCHIVE (made by `git archive` of the tag; its header names the
# commit, which is checked), else the tag cloned from its public home (commit checked).
VOLCANO_TAG=v1.5.1
VOLCANO_COMMIT=183a1781a83fb4b76260b754f294d89b057ad747
VOLCANO_REPO=https://github.com/volcano-sh/volcano.git
VC_CACHE=$CACHE/volcano-$VOLCANO_TAG
VOLCANO_BINARIES=(controller-manager scheduler webhook-manager)

volcano_built() {
  local b
  for b in "${VOLCANO_BINARIES[@]}"; do [ -x "$VC_CACHE/vc-$b" ] || return 1; done
  [ -s "$VC_CACHE/volcano-scheduler.conf" ] && [ -d "$VC_CACHE/crd" ]
}

build_volcano() {
  volcano_built && return 0
  mkdir -p "$VC_CACHE"
  (
    if ! flock -n 9; then
      say "another dev/k8s is building Volcano; waiting for it"
      flock 9
    fi
    volcano_built || build_volcano_locked
  ) 9>"$VC_CACHE/build.lock"
}

# volcano_source DIR: Volcano's source tree, unpacked or cloned into DIR/src, commit checked.
volcano_source() {
  local work=$1 archive=${TORCHX_DEV_K8S_VOLCANO_ARCHIVE:-} commit
  mkdir -p "$work/src"
  if [ -n "$archive" ]; then
    [ -s "$archive" ] || die "TORCHX_DEV_K8S_VOLCANO_ARCHIVE=$archive: no such file (a git archive of Volcano $VOLCANO_TAG, .tar.gz)"
    commit=$(gzip -dc "$archive" | git get-tar-commit-id 2>/dev/null || true)
    [ "$commit" = "$VOLCANO_COMMIT" ] ||
      die "$archive is not Volcano $VOLCANO_TAG: its header names commit '${commit:-none}', not $VOLCANO_COMMIT"
    say "unpacking Volcano $VOLCANO_TAG from $archive"
    tar xzf "$archive" -C "$work/src" --strip-components=1
  else
    command -v git >/dev/null || die "needs git to fetch Volcano $VOLCANO_TAG (or set TORCHX_DEV_K8S_VOLCANO_ARCHIVE)"
    say "fetching Volcano $VOLCANO_TAG from $VOLCANO_REPO"
    git clone -q --depth 1 --branch "$VOLCANO_TAG" "$VOLCANO_REPO" "$work/src" >"$LOG/volcano-fetch.log" 2>&1 ||
      die "could not fetch Volcano $VOLCANO_TAG; read $LOG/volcano-fetch.log (or set TORCHX_DEV_K8S_VOLCANO_ARCHIVE)"
    commit=$(git -C "$work/src" rev-parse HEAD)
    [ "$commit" = "$VOLCANO_COMMIT" ] || die "$VOLCANO_REPO tag $VOLCANO_TAG is commit $commit, not $VOLCANO_COMMIT"
  fi
  [ -d "$work/src/vendor" ] || die "Volcano's source has no vendor/ directory"
}

build_volcano_locked() {
  local work=$VC_CACHE/build b start=$SECONDS
  rm -rf "$work"
  mkdir -p "$work"
  volcano_source "$work"
  say "building Volcano $VOLCANO_TAG (once; about 1 to 3 min; log: $LOG/volcano-build.log)"
  : >"$LOG/volcano-build.log"
  for b in "${VOLCANO_BINARIES[@]}"; do
    (cd "$work/src" && env GOFLAGS=-mod=vendor CGO_ENABLED=0 GOPROXY=off GOCACHE="$work/gocache" HOME="$work" \
      nice -n 10 go build -o "$work/vc-$b" "./cmd/$b") >>"$LOG/volcano-build.log" 2>&1 ||
      die "building Volcano's $b failed; read $LOG/volcano-build.log (tree kept in $work)"
  done
  rm -rf "$VC_CACHE/crd"
  mkdir -p "$VC_CACHE/crd"
  cp "$work/src"/config/crd/bases/*.yaml "$VC_CACHE/crd/"
  cp "$work/src/installer/helm/chart/volcano/config/volcano-scheduler.conf" "$VC_CACHE/volcano-scheduler.conf"
  for b in "${VOLCANO_BINARIES[@]}"; do mv "$work/vc-$b" "$VC_CACHE/vc-$b"; done
  rm -rf "$work"
  say "built Volcano $VOLCANO_TAG into $VC_CACHE in $((SECONDS - start)) s"
}
