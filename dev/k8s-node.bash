# dev/k8s-node.bash: the real node and controllers of `dev/k8s up` (sourced by dev/k8s).
#
# One node, `torchx-dev-node`: a kubelet 1.20.2 (dockershim) on a Docker engine of its own,
# kube-scheduler, kube-controller-manager, Volcano v1.5.1 (controller manager, scheduler,
# admission webhook) and dnsmasq as the cluster DNS, fed by k8s_standin.dns. How each was
# made to run here without changing the host (see the dev/README.md section):
# - No process here may set a negative oom_score_adj: the kubelet is built with its
#   sandboxes' and Guaranteed containers' scores at 0 (dev/k8s's patch_kubelet).
# - A kubelet changes the host: sysctls (vm.overcommit_memory, kernel.panic,
#   kernel.panic_on_oops), /var/log/pods, /var/log/containers, /run (dockershim's socket),
#   /var/lib/kubelet. It and its dockerd run in a private mount namespace, held by a
#   sleeping process, where files with the wanted values cover those three /proc/sys
#   entries (--protect-kernel-defaults then only checks them) and private directories
#   cover /run, /var/log and /var/lib/kubelet. dockerd must share the kubelet's mounts
#   (Secret and memory volumes are tmpfs mounts the kubelet makes).
# - In the same namespace /proc/cpuinfo lists 8 processors per core of this machine, so the
#   node offers what the tests request (whole cpus, mostly waiting).
# - Nothing can be pulled here: the images the tests use are copied from dev/docker's
#   engine (and a pause image is built from the Kubernetes source's pause.c), and the
#   kubelet's image garbage collector never runs (thresholds 100/99).
# - Pods are on a bridge of their own (torchxk8s0); the node's address is the bridge's
#   (kubelet 1.20 refuses a loopback node IP), and dnsmasq answers cluster.local there.

BRIDGE=torchxk8s0
BRIDGE_IP=172.29.124.1
BRIDGE_CIDR=$BRIDGE_IP/24
NODE_NAME=torchx-dev-node
NODE=$DIR/node
NODE_SOCK=$NODE/docker.sock
PAUSE_IMAGE=torchx-dev/pause:1
VC_WEBHOOK_PORT=${TORCHX_DEV_K8S_VC_WEBHOOK_PORT:-16444}
SCHEDULER_PORT=${TORCHX_DEV_K8S_SCHEDULER_PORT:-16259}
CONTROLLER_PORT=${TORCHX_DEV_K8S_CONTROLLER_PORT:-16257}
KUBELET_HEALTHZ_PORT=$((KUBELET_PORT - 2))
NODE_CPU=${TORCHX_DEV_K8S_NODE_CPU:-$(($(nproc) * 8))}
# The daemons of the node, in the order they start (down stops them in reverse).
NODE_DAEMONS=(node-ns node-dockerd kubelet kube-scheduler kube-controller-manager
  vc-webhook-manager vc-controller-manager vc-scheduler dnsmasq dns)

node_docker() { command docker -H "unix://$NODE_SOCK" "$@"; }
# in_ns COMMAND...: COMMAND in the node's mount namespace (nsenter execs it: same PID).
ns_mnt() { echo "/proc/$(head -n1 "$RUN/node-ns.pid")/ns/mnt"; }
in_ns() { nsenter --mount="$(ns_mnt)" -- "$@"; }

# --- the pause image --------------------------------------------------------------------

# build_pause: the pod sandbox's image, from the source's build/pause/linux/pause.c
# (static, in a tarball cached beside the binaries); imported when the engine lacks it.
pause_image() {
  node_docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1 && return 0
  local tar=$CACHE/$SRC_VERSION/pause.tar work
  if [ ! -s "$tar" ]; then
    fetch_source
    work=$(mktemp -d "$CACHE/$SRC_VERSION/.pause.XXXX")
    tar xzf "$CACHE/src/kubernetes_${SRC_VERSION%-*}.orig.tar.gz" -C "$work" --wildcards \
      '*/build/pause/linux/pause.c'
    mkdir -p "$work/root"
    gcc -Os -static -DVERSION="$K8S_VERSION" -o "$work/root/pause" "$work"/*/build/pause/linux/pause.c \
      >"$LOG/pause.log" 2>&1 || die "could not build the pause binary; read $LOG/pause.log"
    tar cf "$tar.tmp" -C "$work/root" pause && mv "$tar.tmp" "$tar"
    rm -rf "$work"
  fi
  node_docker import --change 'ENTRYPOINT ["/pause"]' "$tar" "$PAUSE_IMAGE" >/dev/null ||
    die "docker import of $tar failed"
}

# copy_images: dev/docker's test images into the node's engine when it lacks them (or has
# another build of them); dev/docker makes them, see its section of dev/README.md.
copy_images() {
  local sock image want have
  sock=$(docker_sock)
  for image in "${TORCHX_DEV_DOCKER_BUSYBOX_IMAGE:-torchx-dev/busybox:1}" \
    "${TORCHX_DEV_DOCKER_PYTHON_IMAGE:-torchx-dev/python:2}"; do
    want=$(command docker -H "unix://$sock" image inspect -f '{{.Id}}' "$image" 2>/dev/null) || {
      say "dev/docker's engine has no $image: the node has none either"
      continue
    }
    have=$(node_docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
    [ "$want" = "$have" ] && continue
    say "copying $image from dev/docker's engine to the node's"
    command docker -H "unix://$sock" save "$image" | node_docker load -q >/dev/null ||
      die "could not copy $image into the node's engine"
  done
}

# --- the namespace and the node's engine ------------------------------------------------

# fake_cpus DIR: a copy of /sys/devices/system/node's NUMA node 0 (memory, huge pages) with
# $NODE_CPU online cpus of one core each: the kubelet's cadvisor counts the node's cpus
# there, and the namespace shows DIR in its place.
fake_cpus() {
  local dir=$1 real=/sys/devices/system/node/node0 i h
  rm -rf "$dir"
  mkdir -p "$dir/node0/hugepages"
  cp "$real/meminfo" "$dir/node0/meminfo"
  for h in "$real"/hugepages/hugepages-*; do
    [ -d "$h" ] || continue
    mkdir -p "$dir/node0/hugepages/${h##*/}"
    for i in nr_hugepages free_hugepages surplus_hugepages; do
      [ -f "$h/$i" ] && cat "$h/$i" >"$dir/node0/hugepages/${h##*/}/$i"
    done
  done
  for ((i = 0; i < NODE_CPU; i++)); do
    mkdir -p "$dir/node0/cpu$i/topology"
    echo 1 >"$dir/node0/cpu$i/online"
    echo "$i" >"$dir/node0/cpu$i/topology/core_id"
    echo 0 >"$dir/node0/cpu$i/topology/physical_package_id"
  done
  printf '0\n' >"$dir/online"
  printf '0\n' >"$dir/possible"
}

start_ns() {
  alive "$RUN/node-ns.pid" && return 0
  mkdir -p "$NODE"/{run,log,lib-kubelet,sys,docker/data}
  printf '1\n' >"$NODE/sys/overcommit_memory"
  printf '10\n' >"$NODE/sys/panic"
  printf '1\n' >"$NODE/sys/panic_on_oops"
  local i
  fake_cpus "$NODE/sys/node"
  setsid unshare -m --propagation slave sleep infinity </dev/null >/dev/null 2>&1 &
  echo $! >"$RUN/node-ns.pid"
  for i in $(seq 50); do
    [ "$(readlink "/proc/$(cat "$RUN/node-ns.pid")/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && break
    sleep 0.1
  done
  in_ns sh -ec "
    mount --bind '$NODE/sys/overcommit_memory' /proc/sys/vm/overcommit_memory
    mount --bind '$NODE/sys/panic' /proc/sys/kernel/panic
    mount --bind '$NODE/sys/panic_on_oops' /proc/sys/kernel/panic_on_oops
    mount --bind '$NODE/sys/node' /sys/devices/system/node
    mount --bind '$NODE/run' /run
    mount --bind '$NODE/log' /var/log
    mkdir -p /var/lib/kubelet
    mount --bind '$NODE/lib-kubelet' /var/lib/kubelet
  " || die "could not set up the node's mount namespace"
}

start_node_dockerd() {
  alive "$RUN/node-dockerd.pid" && return 0
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add name "$BRIDGE" type bridge
    ip addr add "$BRIDGE_CIDR" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
  echo '{}' >"$NODE/docker/daemon.json"
  say "starting the node's dockerd on $NODE_SOCK"
  setsid nsenter --mount="$(ns_mnt)" -- dockerd --data-root="$NODE/docker/data" --exec-root=/run/docker-exec \
    --pidfile=/run/docker.pid --host="unix://$NODE_SOCK" --config-file="$NODE/docker/daemon.json" \
    --storage-driver=overlay2 --bridge="$BRIDGE" --iptables=false --ip-forward=false \
    --ip-masq=false --userland-proxy=false </dev/null >>"$LOG/node-dockerd.log" 2>&1 &
  echo $! >"$RUN/node-dockerd.pid"
  wait_for "$TIMEOUT" "the node's dockerd" "$RUN/node-dockerd.pid" "$LOG/node-dockerd.log" \
    node_docker version
}

# --- daemons ----------------------------------------------------------------------------

# start_daemon NAME BINARY [ns]: start NAME from $ETC/NAME.args unless it runs (restarted
# when its arguments changed: write_args returned 0).
start_daemon() {
  local name=$1 binary=$2 where=${3:-} args
  alive "$RUN/$name.pid" && return 0
  mapfile -t args <"$ETC/$name.args"
  say "starting $name"
  if [ "$where" = ns ]; then
    setsid nsenter --mount="$(ns_mnt)" -- "$binary" "${args[@]}" </dev/null >>"$LOG/$name.log" 2>&1 &
  else
    setsid "$binary" "${args[@]}" </dev/null >>"$LOG/$name.log" 2>&1 &
  fi
  echo $! >"$RUN/$name.pid"
}

# write_args NAME: stdin into $ETC/NAME.args; stop NAME when they changed.
write_args() {
  write_if_changed "$ETC/$1.args" 644 && stop "$1" "$RUN/$1.pid"
  return 0
}

# node_certificate: the kubelet's serving certificate must name the node's address (before
# the API server starts: it reads the certificate as the kubelet's CA).
node_certificate() {
  if ! openssl x509 -in "$ETC/kubelet.crt" -noout -ext subjectAltName 2>/dev/null | grep -q "IP Address:$BRIDGE_IP"; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=torchx-dev-kubelet \
      -keyout "$ETC/kubelet.key" -out "$ETC/kubelet.crt" \
      -addext "subjectAltName=IP:127.0.0.1,IP:$BRIDGE_IP,DNS:localhost,DNS:$NODE_NAME" \
      -addext 'basicConstraints=critical,CA:TRUE' \
      -addext 'keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign' \
      -addext 'extendedKeyUsage=serverAuth' >"$LOG/openssl.log" 2>&1 ||
      die "openssl could not make the kubelet certificate; read $LOG/openssl.log"
    RESTART_APISERVER=1
    stop kubelet "$RUN/kubelet.pid"
  fi
  # the webhook's certificate, for the API server calling Volcano's admission webhook
  if [ ! -s "$ETC/vc-webhook.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=torchx-dev-vc-webhook \
      -keyout "$ETC/vc-webhook.key" -out "$ETC/vc-webhook.crt" \
      -addext 'subjectAltName=IP:127.0.0.1' -addext 'basicConstraints=critical,CA:TRUE' \
      -addext 'keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign' \
      -addext 'extendedKeyUsage=serverAuth' >"$LOG/openssl.log" 2>&1 ||
      die "openssl could not make the webhook certificate; read $LOG/openssl.log"
  fi
}

write_node_args() {
  local kubeconfig=$ETC/kubeconfig
  mkdir -p "$NODE/dns"
  printf '%s\n' --kubeconfig="$kubeconfig" --hostname-override="$NODE_NAME" --node-ip="$BRIDGE_IP" \
    --address="$BRIDGE_IP" --port="$KUBELET_PORT" --read-only-port=0 \
    --healthz-bind-address=127.0.0.1 --healthz-port="$KUBELET_HEALTHZ_PORT" \
    --tls-cert-file="$ETC/kubelet.crt" --tls-private-key-file="$ETC/kubelet.key" \
    --client-ca-file="$ETC/kubelet-client.crt" --anonymous-auth=false --authorization-mode=AlwaysAllow \
    --container-runtime=docker --docker-endpoint="unix://$NODE_SOCK" \
    --pod-infra-container-image="$PAUSE_IMAGE" --root-dir=/var/lib/kubelet \
    --volume-plugin-dir=/var/lib/kubelet/volume-plugins --cert-dir=/var/lib/kubelet/pki \
    --fail-swap-on=false --cgroup-driver=cgroupfs --cgroups-per-qos=false --enforce-node-allocatable= \
    --make-iptables-util-chains=false --protect-kernel-defaults=true --oom-score-adj=0 \
    --cluster-domain=cluster.local --cluster-dns="$BRIDGE_IP" \
    --image-gc-high-threshold=100 --image-gc-low-threshold=99 \
    '--eviction-hard=memory.available<100Mi,nodefs.available<1Gi,imagefs.available<1Gi' \
    --logtostderr=true --v=1 | write_args kubelet
  printf '%s\n' --kubeconfig="$kubeconfig" --authentication-kubeconfig="$kubeconfig" \
    --authorization-kubeconfig="$kubeconfig" --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" \
    --port=0 --leader-elect=false --logtostderr=true | write_args kube-scheduler
  # The Job controller is the stand-in's: JobSet's Jobs are Indexed, which 1.20's is not.
  printf '%s\n' --kubeconfig="$kubeconfig" --authentication-kubeconfig="$kubeconfig" \
    --authorization-kubeconfig="$kubeconfig" --bind-address=127.0.0.1 --secure-port="$CONTROLLER_PORT" \
    --port=0 --leader-elect=false --controllers='*,-job' --use-service-account-credentials=false \
    --service-account-private-key-file="$ETC/sa.key" --root-ca-file="$ETC/server.crt" \
    --logtostderr=true | write_args kube-controller-manager
  printf '%s\n' --kubeconfig="$kubeconfig" --listen-address=127.0.0.1 --port="$VC_WEBHOOK_PORT" \
    --webhook-url="https://127.0.0.1:$VC_WEBHOOK_PORT" --tls-cert-file="$ETC/vc-webhook.crt" \
    --tls-private-key-file="$ETC/vc-webhook.key" --ca-cert-file="$ETC/vc-webhook.crt" \
    --enabled-admission=/jobs/mutate,/jobs/validate,/podgroups/mutate,/pods/validate,/queues/mutate,/queues/validate \
    --logtostderr=true | write_args vc-webhook-manager
  printf '%s\n' --kubeconfig="$kubeconfig" --leader-elect=false --logtostderr=true \
    | write_args vc-controller-manager
  printf '%s\n' --kubeconfig="$kubeconfig" --leader-elect=false --scheduler-conf="$VC_CACHE/volcano-scheduler.conf" \
    --listen-address=127.0.0.1:$((VC_WEBHOOK_PORT + 1)) --logtostderr=true | write_args vc-scheduler
  printf '%s\n' --keep-in-foreground --no-resolv --no-hosts --no-poll --bind-interfaces \
    --listen-address="$BRIDGE_IP" --port=53 --local=/cluster.local/ --hostsdir="$NODE/dns" \
    --pid-file= --user=root --log-facility=- | write_args dnsmasq
  printf '%s\n' -m k8s_standin.dns --server="https://127.0.0.1:$API_PORT" --token-file="$ETC/token" \
    --ca-file="$ETC/server.crt" --hosts-dir="$NODE/dns" --ready-file="$NODE/dns.ready" | write_args dns
}

api_ok() { api GET "$1" -f -o /dev/null; }
# node_ready: the node is Ready, and says so since the kubelet this `up` started (its
# Ready condition's heartbeat no older than KUBELET_SINCE, epoch seconds; 0 for a kubelet
# that was already running). etcd keeps the Node of an earlier `up` as Ready until the
# controller manager sees its heartbeats stop (40 s): without the heartbeat's time, a
# kubelet that died at its start read as a Ready node, and every pod stayed Pending.
node_ready() {
  api GET "/api/v1/nodes/$NODE_NAME" 2>/dev/null | python3 -c '
import datetime, json, sys
since = int(sys.argv[1])
for c in json.load(sys.stdin).get("status", {}).get("conditions", []):
    if c.get("type") == "Ready":
        beat = datetime.datetime.fromisoformat(c["lastHeartbeatTime"].replace("Z", "+00:00"))
        sys.exit(0 if c.get("status") == "True" and beat.timestamp() >= since - 1 else 1)
sys.exit(1)
' "${KUBELET_SINCE:-0}"
}

# wait_node_ready: waits for node_ready; a kubelet that exits while starting is started
# once more (seen once: its pod-resources socket refused with "invalid cross-device
# link" right after a warm `up`, and the next start worked), its fatal line said.
wait_node_ready() {
  if (wait_for "$TIMEOUT" "the node (Ready)" "$RUN/kubelet.pid" "$LOG/kubelet.log" node_ready); then
    return 0
  fi
  alive "$RUN/kubelet.pid" && exit 1 # not Ready in time while running: said by wait_for
  say "the kubelet exited while starting ($(grep '^F' "$LOG/kubelet.log" | tail -n1 | cut -c1-240)); starting it once more"
  KUBELET_SINCE=$(date -u +%s)
  start_daemon kubelet "$CACHE/$SRC_VERSION/kubelet" ns
  wait_for "$TIMEOUT" "the node (Ready)" "$RUN/kubelet.pid" "$LOG/kubelet.log" node_ready
}
webhook_registered() {
  api GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/webhook-jobs-mutate -f -o /dev/null
}
queue_exists() { api_ok /apis/scheduling.volcano.sh/v1beta1/queues/default; }
dns_ready() { [ "$(cat "$NODE/dns.ready" 2>/dev/null)" = "$(head -n1 "$RUN/dns.pid" 2>/dev/null)" ]; }

# start_node: everything of the node, each started only when not running.
start_node() {
  write_node_args
  start_ns
  start_node_dockerd
  pause_image
  copy_images
  KUBELET_SINCE=0
  alive "$RUN/kubelet.pid" || KUBELET_SINCE=$(date -u +%s)
  start_daemon kubelet "$CACHE/$SRC_VERSION/kubelet" ns
  start_daemon kube-scheduler "$CACHE/$SRC_VERSION/kube-scheduler"
  start_daemon kube-controller-manager "$CACHE/$SRC_VERSION/kube-controller-manager"
  start_daemon vc-webhook-manager "$VC_CACHE/vc-webhook-manager"
  start_daemon vc-controller-manager "$VC_CACHE/vc-controller-manager"
  start_daemon vc-scheduler "$VC_CACHE/vc-scheduler"
  start_daemon dnsmasq "$(command -v dnsmasq)"
  if ! alive "$RUN/dns.pid"; then
    rm -f "$NODE/dns.ready"
    (cd "$STANDIN_SRC" && start_daemon dns "$(command -v python3)")
  fi
  wait_node_ready
  wait_for "$TIMEOUT" "Volcano's webhook" "$RUN/vc-webhook-manager.pid" "$LOG/vc-webhook-manager.log" webhook_registered
  wait_for "$TIMEOUT" "Volcano's default queue" "$RUN/vc-scheduler.pid" "$LOG/vc-scheduler.log" queue_exists
  wait_for "$TIMEOUT" "the DNS syncer" "$RUN/dns.pid" "$LOG/dns.log" dns_ready
  say "node $NODE_NAME Ready ($NODE_CPU cpus), Volcano and the cluster DNS on $BRIDGE_IP"
}

# remove_volcano_webhooks: Volcano's webhook manager registers its hooks (failurePolicy Fail)
# in the API; once it stops they would refuse every pod and Volcano Job (etcd's data
# survives `down`), so `down` deletes them.
VC_WEBHOOKS=(mutatingwebhookconfigurations/webhook-jobs-mutate
  mutatingwebhookconfigurations/webhook-podgroups-mutate
  mutatingwebhookconfigurations/webhook-queues-mutate
  validatingwebhookconfigurations/webhook-jobs-validate
  validatingwebhookconfigurations/webhook-pods-validate
  validatingwebhookconfigurations/webhook-queues-validate)
remove_volcano_webhooks() {
  local w
  apiserver_ready || return 0
  for w in "${VC_WEBHOOKS[@]}"; do
    api DELETE "/apis/admissionregistration.k8s.io/v1/$w" -o /dev/null 2>/dev/null || true
  done
}

# stop_node: every daemon of the node (reverse order), the pods' containers, the
# namespace (its mounts go with it), the bridge, and the node's runtime files.
stop_node() {
  local i name
  for ((i = ${#NODE_DAEMONS[@]} - 1; i >= 0; i--)); do
    name=${NODE_DAEMONS[i]}
    case $name in
      node-dockerd)
        if alive "$RUN/node-dockerd.pid"; then
          # shellcheck disable=SC2046
          node_docker rm -f $(node_docker ps -aq 2>/dev/null) >/dev/null 2>&1 || true
        fi
        stop "the node's dockerd" "$RUN/node-dockerd.pid"
        stop "the node's containerd" "$NODE/run/docker-exec/containerd/containerd.pid"
        ;;
      node-ns) ns_leftovers && stop "$name" "$RUN/$name.pid" ;;
      *) stop "$name" "$RUN/$name.pid" ;;
    esac
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE" 2>/dev/null || true; fi
  # the namespace is gone, and its mounts: what the kubelet wrote goes too (images stay)
  rm -rf "$NODE/run" "$NODE/log" "$NODE/lib-kubelet" "$NODE/dns" "$NODE/dns.ready" "$NODE/sys" ||
    say "could not remove all of the node's files in $NODE"
}

# ns_leftovers: SIGKILL any process still in the node's namespace besides its holder (a
# container process whose engine was killed), by PID, so the namespace and its mounts go.
ns_leftovers() {
  alive "$RUN/node-ns.pid" || return 0
  local holder ns p
  holder=$(head -n1 "$RUN/node-ns.pid")
  ns=$(readlink "/proc/$holder/ns/mnt") || return 0
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" != "$holder" ] && [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
    say "killing pid $p, left in the node's namespace"
    kill -KILL "$p" 2>/dev/null || true
  done
  return 0
}

node_status() {
  local name rc=0
  for name in "${NODE_DAEMONS[@]}"; do
    if alive "$RUN/$name.pid"; then echo "$name: running (pid $(head -n1 "$RUN/$name.pid"))" >&2; else
      echo "$name: stopped" >&2
      rc=1
    fi
  done
  return $rc
}
