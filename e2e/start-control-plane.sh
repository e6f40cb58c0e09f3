#!/usr/bin/env bash
# Start a real etcd + kube-apiserver on loopback for e2e tests and the demo.
# No kubelet, no controller-manager, no scheduler: see e2e/README.md.
#
# Usage: e2e/start-control-plane.sh [STATE_DIR]
#   STATE_DIR defaults to ${MCPGOV_E2E_DIR:-/tmp/mcpgov-e2e}; it holds pids,
#   logs, certs, kubeconfig and an `env` file to source.
# Knobs: MCPGOV_START_TIMEOUT (seconds to wait for /readyz, default 120);
#        MCPGOV_ADVERTISE_ADDRESS (only for hosts without a default route,
#        where the apiserver cannot pick one; must not be loopback).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${1:-${MCPGOV_E2E_DIR:-/tmp/mcpgov-e2e}}"
BIN="${MCPGOV_CACHE:-$HOME/.cache/mcpgov}/bin"
TIMEOUT="${MCPGOV_START_TIMEOUT:-120}"

log() { printf '[start-control-plane] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v openssl >/dev/null || die "openssl is required (to make the CA, serving cert and service-account keys)"

# True if the pid in file $1 is alive and runs binary $2 (a recycled pid
# belonging to something else must not count, nor be killed by stop).
alive() {
  local pid cmd
  pid="$(cat "$1" 2>/dev/null)" && [[ -n "$pid" ]] || return 1
  cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
  [[ "$cmd" == *"$2"* ]]
}

print_hint() {
  log "control plane ready: $(sed -n 's/^export MCPGOV_APISERVER_URL=//p' "$STATE/env")"
  echo "export KUBECONFIG=$STATE/kubeconfig"
  echo "# or: source $STATE/env   (also sets MCPGOV_* variables and puts kubectl on PATH)"
}

# Already up? Then starting again is a no-op, so callers need not track it.
if alive "$STATE/kube-apiserver.pid" kube-apiserver && alive "$STATE/etcd.pid" etcd && [[ -f "$STATE/env" ]]; then
  log "already running in $STATE"
  print_hint
  exit 0
fi
# Leftovers from a crashed or half-started run: clean them up first.
[[ -e "$STATE" ]] && "$HERE/stop-control-plane.sh" "$STATE"

"$HERE/build-control-plane.sh"   # instant when the cache is warm

mkdir -p "$STATE"
chmod 700 "$STATE"   # it holds the admin token and private keys
STATE="$(cd "$STATE" && pwd)"   # absolute: it goes into flags and files
touch "$STATE/.mcpgov-e2e"      # lets stop-control-plane.sh know it may delete it
cd "$STATE"

# A free loopback port: let the kernel choose (python3), else probe random
# ports with bash's /dev/tcp (a refused connection means nobody listens).
free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    return
  fi
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  die "no free port found"
}
ETCD_PORT="$(free_port)"
ETCD_PEER_PORT="$(free_port)"
API_PORT="$(free_port)"

# etcd data in tmpfs: fast, and nothing survives a stop. Prefer /dev/shm,
# then $XDG_RUNTIME_DIR (tmpfs on systemd hosts), else a plain temp dir.
for base in /dev/shm "${XDG_RUNTIME_DIR:-}" "${TMPDIR:-/tmp}"; do
  [[ -n "$base" && -d "$base" && -w "$base" ]] && break
done
ETCD_DATA="$(mktemp -d "$base/mcpgov-etcd.XXXXXX")"
echo "$ETCD_DATA" >etcd-data-dir   # stop-control-plane.sh removes it

# --- Certificates and keys --------------------------------------------------
# A CA plus a separate leaf serving cert: rustls (kube-rs) rejects a
# self-signed CA certificate presented as the server certificate.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout ca.key -out ca.crt -days 30 -subj "/CN=mcpgov-e2e-ca" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
cat >apiserver.ext <<'EOF'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
EOF
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -out apiserver.crt -days 30 -extfile apiserver.ext 2>/dev/null
# Service-account token signing pair (the TokenRequest API needs it).
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
# Static bearer token for an admin user; system:masters bypasses RBAC.
TOKEN="$(openssl rand -hex 32)"
echo "$TOKEN,mcpgov-admin,mcpgov-admin,\"system:masters\"" >tokens.csv

# --- etcd ---------------------------------------------------------------------
"$BIN/etcd" \
  --name=mcpgov-e2e \
  --data-dir="$ETCD_DATA" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster="mcpgov-e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync \
  >etcd.log 2>&1 </dev/null &
echo $! >etcd.pid

# --- kube-apiserver ---------------------------------------------------------
# No --advertise-address by default: a loopback one is rejected for the
# `kubernetes` Service endpoints, so let the apiserver pick the host's address.
advertise=()
[[ -n "${MCPGOV_ADVERTISE_ADDRESS:-}" ]] && advertise=(--advertise-address="$MCPGOV_ADVERTISE_ADDRESS")
"$BIN/kube-apiserver" "${advertise[@]}" \
  --bind-address=127.0.0.1 \
  --secure-port="$API_PORT" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --tls-cert-file="$STATE/apiserver.crt" \
  --tls-private-key-file="$STATE/apiserver.key" \
  --client-ca-file="$STATE/ca.crt" \
  --token-auth-file="$STATE/tokens.csv" \
  --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$STATE/sa.pub" \
  --service-account-signing-key-file="$STATE/sa.key" \
  --disable-admission-plugins=ServiceAccount \
  --service-cluster-ip-range=10.0.0.0/24 \
  --cert-dir="$STATE/apiserver-certs" \
  --profiling=false \
  >kube-apiserver.log 2>&1 </dev/null &
echo $! >kube-apiserver.pid

# --- kubeconfig and env file ---------------------------------------------------
SERVER="https://127.0.0.1:$API_PORT"
cat >kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters:
- name: mcpgov-e2e
  cluster:
    server: $SERVER
    certificate-authority-data: $(base64 -w0 <ca.crt)
users:
- name: mcpgov-admin
  user:
    token: $TOKEN
contexts:
- name: mcpgov-e2e
  context:
    cluster: mcpgov-e2e
    user: mcpgov-admin
current-context: mcpgov-e2e
EOF
{
  printf 'export KUBECONFIG=%q\n' "$STATE/kubeconfig"
  printf 'export MCPGOV_E2E_DIR=%q\n' "$STATE"
  printf 'export MCPGOV_APISERVER_URL=%q\n' "$SERVER"
  printf 'export MCPGOV_ADMIN_TOKEN=%q\n' "$TOKEN"
  printf 'export MCPGOV_CA_FILE=%q\n' "$STATE/ca.crt"
  printf 'export MCPGOV_ETCD_URL=%q\n' "http://127.0.0.1:$ETCD_PORT"
  printf 'export MCPGOV_BIN_DIR=%q\n' "$BIN"
  # shellcheck disable=SC2016 # $PATH is meant to expand when sourced
  printf 'export PATH=%q:"$PATH"\n' "$BIN"
} >"$STATE/env"

# --- Wait for /readyz (polling with a deadline; no fixed sleeps) ---------------
fail() {
  log "error: $*"
  log "--- tail of $STATE/etcd.log";           tail -n 15 etcd.log >&2 || true
  log "--- tail of $STATE/kube-apiserver.log"; tail -n 40 kube-apiserver.log >&2 || true
  # Stop both but keep the logs: the next start (or stop) cleans up.
  MCPGOV_KEEP_STATE=1 "$HERE/stop-control-plane.sh" "$STATE" || true
  exit 1
}
started=$SECONDS
deadline=$((SECONDS + TIMEOUT))
until "$BIN/kubectl" --kubeconfig=kubeconfig get --raw=/readyz --request-timeout=2s >/dev/null 2>&1; do
  alive etcd.pid etcd                     || fail "etcd exited"
  alive kube-apiserver.pid kube-apiserver || fail "kube-apiserver exited"
  (( SECONDS < deadline ))                || fail "kube-apiserver not ready after ${TIMEOUT}s"
  sleep 0.2
done
log "ready after $((SECONDS - started))s"
print_hint
