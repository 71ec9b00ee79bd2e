#!/usr/bin/env bash
# Replays docs/OPERATING.md on one machine: a Consul dev agent, a one-node
# Nomad cluster (server and client in one agent, with a data_dir so the
# plugin upgrade can restart it), the binaries from `make build`, and
# vllm-sim as the engine. Each command of the guide runs in the guide's
# order and its output is checked; the summary at the end counts the
# checks. Everything lives under $OPS and is removed at the end (KEEP=1
# keeps it, with the agents' logs).
#
# It needs root (the exec driver's chroot), a nomad and a consul binary,
# curl and jq. CI has no Nomad binary, so this runs by hand:
#
#   make build
#   NOMAD=/path/to/nomad CONSUL=/path/to/consul docs/operating/replay.sh
#
# Ports are variables so the replay can run beside another agent.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$REPO/bin}
NOMAD=${NOMAD:-nomad}
CONSUL=${CONSUL:-consul}
OPS=${OPS:-/tmp/opsguide}
NOMAD_HTTP_PORT=${NOMAD_HTTP_PORT:-14646}
NOMAD_RPC_PORT=${NOMAD_RPC_PORT:-14647}
NOMAD_SERF_PORT=${NOMAD_SERF_PORT:-14648}
CONSUL_HTTP_PORT=${CONSUL_HTTP_PORT:-18500}
CONSUL_DNS_PORT=${CONSUL_DNS_PORT:-18600}
CONSUL_SERVER_PORT=${CONSUL_SERVER_PORT:-18300}
CONSUL_SERF_LAN_PORT=${CONSUL_SERF_LAN_PORT:-18301}
CONSUL_SERF_WAN_PORT=${CONSUL_SERF_WAN_PORT:-18302}
ROUTER_PORT=${ROUTER_PORT:-18080}
# The job variables that fit this one-node cluster (docs/OPERATING.md,
# "Run the routers"), and the route headers, which the P/D and migration
# checks read. router_command stays last: section 11 replaces it.
ROUTER_VARS=(-var routers=1 -var "http_port=$ROUTER_PORT"
  -var "consul_address=127.0.0.1:$CONSUL_HTTP_PORT" -var expose_route_headers=true
  -var router_command=/opt/llmgw/bin/llmgw-router)

export NOMAD_ADDR=http://127.0.0.1:$NOMAD_HTTP_PORT
export CONSUL_HTTP_ADDR=127.0.0.1:$CONSUL_HTTP_PORT
unset AWS_CA_BUNDLE NOMAD_TOKEN CONSUL_HTTP_TOKEN
MGMT_TOKEN=

passed=0
log() { printf '%s %s\n' "$(date -u +%T)" "$*"; }
ok() { passed=$((passed + 1)); log "  ok: $*"; }
fail() {
  log "  FAIL: $*"
  log "replay failed after $passed checks; logs in $OPS (kept)"
  KEEP=1
  exit 1
}
# run CMD...: echoes the guide's command, runs it, keeps its output in $out.
run() {
  log "\$ $*"
  local rc=0
  out=$("$@" 2>&1) || rc=$?
  if ((rc != 0)); then
    printf '%s\n' "$out" | tail -20
    fail "exit status $rc from: $*"
  fi
  printf '%s\n' "$out" | sed 's/^/    /' | tail -${TAIL:-8}
}
# until_ok DESC SECONDS CMD...: polls CMD every second until it succeeds.
until_ok() {
  local desc=$1 secs=$2
  shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || fail "$desc: not within ${secs}s"
    sleep 1
  done
  ok "$desc"
}

pids=()
cleanup() {
  set +e
  local allocs=""
  if [[ -n ${agent_pid:-} ]] && kill -0 "$agent_pid" 2>/dev/null; then
    allocs=$(curl -fs -H "X-Nomad-Token: ${MGMT_TOKEN:-}" "$NOMAD_ADDR/v1/allocations" | jq -r '.[].ID' | tr '\n' ' ')
    # Stop, wait for the client to stop every task (shutdown_delay
    # included), and only then purge: a purged job's allocations leave the
    # API before their tasks have stopped.
    export NOMAD_TOKEN=${MGMT_TOKEN:-}
    for j in demo-sim demo-sim-pd llmgw-router; do "$NOMAD" job stop -detach "$j" >/dev/null 2>&1; done
    # Wait until the client has stopped every task (engines, supervisors).
    local end=$((SECONDS + 60))
    while ((SECONDS < end)) && curl -fs -H "X-Nomad-Token: ${MGMT_TOKEN:-}" "$NOMAD_ADDR/v1/allocations" | jq -e 'map(select(.ClientStatus == "running" or .ClientStatus == "pending")) | length > 0' >/dev/null 2>&1; do sleep 1; done
    for j in demo-sim demo-sim-pd llmgw-router; do "$NOMAD" job stop -purge -detach "$j" >/dev/null 2>&1; done
  fi
  for p in ${agent_pid:-} "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  # Anything still running from this replay's own directory is ours: a task
  # the client did not stop in time (its root or working directory is in
  # $OPS: exec tasks run chrooted there), an engine, an executor. Stop it
  # by pid.
  local d p
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [[ $p == "$$" ]] && continue
    local cg a mine=0
    cg=$(cat "$d/cgroup" 2>/dev/null)
    for a in $allocs; do [[ $cg == *"/nomad/$a."* ]] && mine=1; done
    if ((mine)) || [[ $(readlink "$d/root" 2>/dev/null) == "$OPS"/* || $(readlink "$d/cwd" 2>/dev/null) == "$OPS"/* ]] ||
      tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -q -- "$OPS/"; then
      kill -9 "$p" 2>/dev/null
    fi
  done
  # Never remove a directory something is still mounted on.
  for m in $(awk -v d="$OPS/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do umount "$m"; done
  if [[ ${KEEP:-0} != 1 ]] && ! awk -v d="$OPS/" 'index($2, d) == 1 {found = 1} END {exit !found}' /proc/mounts; then
    rm -rf "$OPS"
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in "$NOMAD" "$CONSUL" curl jq; do command -v "$t" >/dev/null || fail "$t not found"; done
for b in nomad-driver-vllm llmgw-router llmgw vllm-sim; do [[ -x $BIN/$b ]] || fail "$BIN/$b missing: make build"; done
[[ $(id -u) == 0 ]] || fail "run as root: the Nomad client and its exec driver need it"
if [[ -e $OPS ]]; then fail "$OPS exists: remove it or set OPS"; fi
mkdir -p "$OPS"/{plugins,bin,models,nomad/data,consul}
chmod 0755 "$OPS" "$OPS/bin"

log "== 1. install the plugin and the binaries"
run install -m 0755 "$BIN/nomad-driver-vllm" "$OPS/plugins/nomad-driver-vllm"
run install -m 0755 "$BIN/llmgw-router" "$BIN/vllm-sim" "$BIN/llmgw" "$OPS/bin/"
LLMGW=$OPS/bin/llmgw

log "== 2. Consul"
"$CONSUL" agent -dev -bind 127.0.0.1 -client 127.0.0.1 -node opsguide \
  -http-port "$CONSUL_HTTP_PORT" -dns-port "$CONSUL_DNS_PORT" -server-port "$CONSUL_SERVER_PORT" \
  -serf-lan-port "$CONSUL_SERF_LAN_PORT" -serf-wan-port "$CONSUL_SERF_WAN_PORT" -grpc-port -1 -grpc-tls-port -1 \
  -data-dir "$OPS/consul" >"$OPS/consul.log" 2>&1 &
pids+=($!)
until_ok "Consul has a leader" 60 bash -c "curl -fs http://$CONSUL_HTTP_ADDR/v1/status/leader | grep -q ':'"

log "== 3. the Nomad agent"
INGEST_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
PEER_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$OPS/agent.hcl" <<EOF
name      = "opsguide"
data_dir  = "$OPS/nomad/data"
bind_addr = "127.0.0.1"
advertise {
  http = "127.0.0.1"
  rpc  = "127.0.0.1"
  serf = "127.0.0.1"
}
ports {
  http = $NOMAD_HTTP_PORT
  rpc  = $NOMAD_RPC_PORT
  serf = $NOMAD_SERF_PORT
}

server {
  enabled          = true
  bootstrap_expect = 1
}

client {
  enabled           = true
  network_interface = "lo"
  options = {
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
  # What llmgw-router needs in the exec driver's chroot: the C library
  # and loader (ldd llmgw-router; symlinks are not followed, so name the
  # files they point to), CA certificates, name resolution, and the llmgw
  # binaries. Nomad's default (/bin, /etc, /lib*, /sbin, /usr) puts
  # gigabytes into every task directory and takes a minute per start.
  chroot_env = {
    "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" = "/lib64/ld-linux-x86-64.so.2"
    "/usr/lib/x86_64-linux-gnu/libc.so.6"            = "/lib/x86_64-linux-gnu/libc.so.6"
    "/etc/ssl/certs/ca-certificates.crt"             = "/etc/ssl/certs/ca-certificates.crt"
    "/etc/hosts"                       = "/etc/hosts"
    "/etc/resolv.conf"                 = "/etc/resolv.conf"
    "/etc/nsswitch.conf"               = "/etc/nsswitch.conf"
    "/etc/passwd"                      = "/etc/passwd"
    "/etc/group"                       = "/etc/group"
    "$OPS/bin"                         = "/opt/llmgw/bin"
  }
  host_volume "models" {
    path      = "$OPS/models"
    read_only = true
  }
}

consul {
  address = "127.0.0.1:$CONSUL_HTTP_PORT"
}

# As on a production cluster: every call needs a token.
acl {
  enabled = true
}

plugin_dir = "$OPS/plugins"

plugin "nomad-driver-vllm" {
  config {
    engine            = "$OPS/bin/vllm-sim"
    consul_address    = "127.0.0.1:$CONSUL_HTTP_PORT"
    router_service    = "llmgw-router"
    kv_flush_interval = "250ms"
    kv_keep_alive     = "10s"
    ingest_token      = "$INGEST_TOKEN"
  }
}
EOF
start_agent() {
  "$NOMAD" agent -config "$OPS/agent.hcl" >>"$OPS/nomad.log" 2>&1 &
  agent_pid=$!
}
start_agent
until_ok "the Nomad server has a leader" 60 bash -c "curl -fs $NOMAD_ADDR/v1/status/leader | grep -q ':'"
run "$NOMAD" acl bootstrap -json
MGMT_TOKEN=$(jq -r .SecretID <<<"$out")
[[ $MGMT_TOKEN =~ ^[0-9a-f-]{36}$ ]] || fail "acl bootstrap gave no Secret ID"
ok "ACLs bootstrapped"
log "== 3b. the operator's token (docs/OPERATING.md, section 3)"
NOMAD_TOKEN=$MGMT_TOKEN run "$NOMAD" acl policy apply -description "llmgw operator" llmgw-operator "$REPO/docs/operating/llmgw-operator.policy.hcl"
NOMAD_TOKEN=$MGMT_TOKEN run "$NOMAD" acl token create -name llmgw-operator -policy llmgw-operator -json
export NOMAD_TOKEN
NOMAD_TOKEN=$(jq -r .SecretID <<<"$out")
[[ $NOMAD_TOKEN =~ ^[0-9a-f-]{36}$ ]] || fail "acl token create gave no Secret ID"
ok "every command from here runs with the operator's token, not a management one"
node_ready() {
  kill -0 "$agent_pid" 2>/dev/null || fail "the Nomad agent exited: $(tail -3 "$OPS/nomad.log")"
  "$NOMAD" node status -self -json 2>/dev/null | jq -e '.Status == "ready" and .Drivers.vllm.Healthy' >/dev/null
}
until_ok "the node is ready with a healthy vllm driver" 120 node_ready
TAIL=40 run "$NOMAD" node status -self -verbose
grep -q 'driver.vllm.engine *= *'"$OPS"'/bin/vllm-sim' <<<"$out" || fail "no driver.vllm.engine attribute"
"$NOMAD" node status -self -json | jq -e '.HostVolumes.models.ReadOnly' >/dev/null || fail "host volume models not listed"
ok "driver.vllm.engine and driver.vllm.version are fingerprinted; host volume models listed"

log "== 4. Nomad Variables: tokens and keys"
run "$OPS/bin/llmgw-router" -new-key
CLIENT_KEY=$(awk '/^key:/{print $2}' <<<"$out")
CLIENT_HASH=$(awk '/^sha256:/{print $2}' <<<"$out")
[[ -n $CLIENT_KEY && -n $CLIENT_HASH ]] || fail "llmgw-router -new-key printed no key"
cat >"$OPS/keys.json" <<EOF
{"tenants": [{"name": "demo", "keys_sha256": ["$CLIENT_HASH"], "models": ["sim-model"],
  "limits": {"requests_per_second": 50}}]}
EOF
run "$NOMAD" var put -force nomad/jobs/llmgw-router kv_token="$INGEST_TOKEN" peer_token="$PEER_TOKEN" admin_token="$ADMIN_TOKEN" engine_api_key=
run "$NOMAD" var put -force nomad/jobs/llmgw-router/router keys_json=@"$OPS/keys.json"
run "$NOMAD" var list nomad/jobs/
grep -q nomad/jobs/llmgw-router/router <<<"$out" || fail "variables not listed"
ok "router variables stored"

log "== 5. validate and plan every shipped jobspec"
cd "$REPO"
run "$LLMGW" jobs validate jobs/*.nomad.hcl
for f in jobs/*.nomad.hcl; do
  vars=()
  [[ $f == jobs/llmgw-router.nomad.hcl ]] && vars=("${ROUTER_VARS[@]}")
  run "$NOMAD" job validate "${vars[@]}" "$f"
  grep -q 'Job validation successful' <<<"$out" || fail "nomad job validate $f"
  log "\$ nomad job plan ${vars[*]} $f"
  set +e
  out=$("$NOMAD" job plan "${vars[@]}" "$f" 2>&1)
  rc=$?
  set -e
  printf '%s\n' "$out" | grep -E '^\+|Task Group|Placement Failure|Constraint|Dimension|exhausted|unsatisfied' | sed 's/^/    /' | head -6
  # 1: the plan would change the cluster; 0: nothing to do; 255: error.
  ((rc == 0 || rc == 1)) || fail "nomad job plan $f: exit $rc"
  ok "$f validates and plans (plan exit $rc)"
done

log "== 6. run the routers"
TAIL=12 run "$LLMGW" jobs run "${ROUTER_VARS[@]}" jobs/llmgw-router.nomad.hcl
grep -q 'successful' <<<"$out" || fail "router deployment did not succeed"
ok "llmgw jobs run: router deployment successful"
router_addr() {
  curl -fs "http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing" |
    jq -r '.[0] | "\(.Service.Address):\(.Service.Port)"'
}
until_ok "llmgw-router passes its Consul check" 60 bash -c "curl -fs 'http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing' | jq -e 'length == 1'"
ROUTER=$(router_addr)
ADMIN=$(curl -fs "http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing" | jq -r '.[0] | "\(.Service.Address):\(.Service.Meta["llmgw-admin-port"])"')
log "router $ROUTER, admin $ADMIN"

log "== 7. run the model job"
TAIL=6 run "$NOMAD" job run jobs/demo-sim.nomad.hcl
grep -q 'Deployment completed successfully' <<<"$out" || fail "demo-sim deployment did not succeed"
ok "nomad job run: demo-sim deployment successful"

replicas() { curl -fs -H "Authorization: Bearer $ADMIN_TOKEN" "http://$ADMIN/admin/replicas"; }
exact_replicas() { replicas | jq -e --argjson n "$1" '[.replicas[] | select(.model == "sim-model" and .mode == "exact" and .healthy)] | length == $n'; }
until_ok "the router lists 4 sim-model replicas, all exact and healthy" 90 exact_replicas 4
TAIL=12 LLMGW_ADMIN_TOKEN=$ADMIN_TOKEN run "$LLMGW" status
grep -q 'exact' <<<"$out" || fail "llmgw status shows no exact replica"
ok "llmgw status shows the fleet"

log "== 8. traffic"
complete() {
  curl -fsS -m 30 "http://$1/v1/chat/completions" -H "Authorization: Bearer $CLIENT_KEY" \
    -H 'Content-Type: application/json' \
    -d '{"model": "sim-model", "max_tokens": 16, "messages": [{"role": "user", "content": "The operators guide replays every command against a real agent."}]}'
}
run complete "$ROUTER"
jq -e '.choices[0].message.content | length > 0' <<<"$out" >/dev/null || fail "no completion"
ok "a chat completion through the router found in Consul"
if [[ -x $(command -v python3) ]]; then
  run python3 "$REPO/docs/operating/srv.py" 127.0.0.1 "$CONSUL_DNS_PORT" llmgw-router.service.consul
  DNS_ROUTER=$out
  run complete "$DNS_ROUTER"
  jq -e '.choices[0].message.content | length > 0' <<<"$out" >/dev/null || fail "no completion via DNS"
  ok "a chat completion through the router found by Consul DNS (SRV)"
fi
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$ROUTER/v1/models")
[[ $code == 401 ]] || fail "no key: got $code, want 401"
ok "a request without a key gets 401"
metrics() { curl -fs -H "Authorization: Bearer $ADMIN_TOKEN" "http://$ADMIN/metrics"; }
run bash -c "curl -fs -H 'Authorization: Bearer $ADMIN_TOKEN' http://$ADMIN/metrics | grep -E '^llmgw_(replica_info|kv_ingest_total|replica_kv_events_missing)' | head -20"
grep -q 'mode="exact"' <<<"$out" || fail "llmgw_replica_info has no exact replica"
ok "metrics show exact replicas and KV ingest"

# stream_and_kill: a long streamed completion (ignore_eos, $STREAM_TOKENS
# tokens), its engine killed by Nomad once the first words have arrived.
# Leaves the route headers in $OPS/stream.hdr, the events in
# $OPS/stream.body and the killed replica in $killed.
STREAM_TOKENS=600
stream_and_kill() {
  rm -f "$OPS/stream.hdr" "$OPS/stream.body"
  curl -sS -N -m 120 -D "$OPS/stream.hdr" "http://$ROUTER/v1/chat/completions" \
    -H "Authorization: Bearer $CLIENT_KEY" -H 'Content-Type: application/json' \
    -d '{"model": "sim-model", "stream": true, "max_tokens": '"$STREAM_TOKENS"', "ignore_eos": true,
      "stream_options": {"include_usage": true},
      "messages": [{"role": "user", "content": "Tell a long story about a stream that outlives its engine."}]}' \
    >"$OPS/stream.body" 2>&1 &
  local curl_pid=$! end=$((SECONDS + 30))
  until grep -q '"content":"[^"]' "$OPS/stream.body" 2>/dev/null; do
    ((SECONDS < end)) || fail "the stream sent no content within 30s: $(head -c 300 "$OPS/stream.body")"
    sleep 0.1
  done
  killed=$(header X-Llmgw-Replica)
  [[ $killed == */* ]] || fail "no X-Llmgw-Replica header: $(cat "$OPS/stream.hdr")"
  run "$NOMAD" alloc signal -s SIGKILL "${killed%%/*}" "${killed#*/}"
  wait "$curl_pid" || fail "the client's stream failed: $(tail -3 "$OPS/stream.body")"
}
# header NAME: a response header of the last stream.
header() { awk -v h="$(tr 'A-Z' 'a-z' <<<"$1"):" 'tolower($1) == h {print $2}' "$OPS/stream.hdr" | tr -d '\r'; }
# stream_whole: the last stream ended with [DONE], no error event, and a
# usage chunk counting every token asked for.
stream_whole() {
  log "stream: $(grep -c '^data:' "$OPS/stream.body") events; last: $(grep '^data:' "$OPS/stream.body" | tail -1)"
  [[ $(grep '^data:' "$OPS/stream.body" | tail -1) == 'data: [DONE]' ]] || fail "the stream did not end with [DONE]"
  ! grep -q '"error"' "$OPS/stream.body" || fail "the stream has an error event: $(grep '"error"' "$OPS/stream.body" | head -1)"
  grep '^data: {' "$OPS/stream.body" | sed 's/^data: //' | jq -se --argjson n "$STREAM_TOKENS" \
    'map(select(.usage != null)) | length == 1 and .[0].usage.completion_tokens == $n' >/dev/null ||
    fail "no usage chunk with $STREAM_TOKENS completion tokens"
}
router_alloc() { "$NOMAD" job allocs -json llmgw-router | jq -r '[.[] | select(.ClientStatus == "running")][0].ID'; }
# migrated FROM: the router logged the move of a stream away from FROM.
migrated() { "$NOMAD" alloc logs -stderr "$(router_alloc)" router 2>&1 | grep "stream migrated: .*from=$1"; }
# restarted REPLICA: Nomad restarted the killed task and its engine
# answers /health again: the driver's "model ready" follows the last
# "Restarting" (the client's own "Started" may come before or after it).
restarted() {
  "$NOMAD" alloc status -json "${1%%/*}" | jq -e --arg t "${1#*/}" \
    '.TaskStates[$t] | .Restarts >= 1 and .State == "running" and
     (.Events | .[(map(.Type) | rindex("Restarting")):] | any(.DisplayMessage == "model ready"))'
}

log "== 8a. mid-stream migration (aggregated): the stream's engine is killed"
stream_and_kill
log "stream on $killed, routed $(header X-Llmgw-Routing-Mode)"
stream_whole
ok "the stream completed after its engine was killed: [DONE], no error event, $STREAM_TOKENS tokens"
until_ok "the router logged \"stream migrated\" from $killed" 30 migrated "$killed"
log "$(migrated "$killed")"
until_ok "Nomad restarted the killed task, its engine ready again" 90 restarted "$killed"
until_ok "the killed replica is back: 4 sim-model replicas exact and healthy" 90 exact_replicas 4

log "== 9. scaling"
TAIL=4 run "$NOMAD" job scale demo-sim sim 2
until_ok "the router lists 2 replicas after scaling down" 60 exact_replicas 2
TAIL=6 run "$LLMGW" jobs run jobs/demo-sim.nomad.hcl
grep -q 'successful' <<<"$out" || fail "demo-sim back to 4: deployment did not succeed"
until_ok "llmgw jobs run brings demo-sim back to 4 exact replicas" 90 exact_replicas 4

log "== 9b. autoscaling: the signal, the policies, the autoscaler's ACL policy"
TAIL=12 run bash -c "curl -fs -H 'Authorization: Bearer $ADMIN_TOKEN' http://$ADMIN/metrics | grep '^llmgw_model_'"
grep -q '^llmgw_model_replicas{model="sim-model"} 4$' <<<"$out" || fail "llmgw_model_replicas{model=\"sim-model\"} is not 4"
grep -Eq '^llmgw_model_replicas_recommended\{model="sim-model"\} [0-9]+$' <<<"$out" || fail "no recommended replica count for sim-model"
ok "the routers export the autoscaling signal for sim-model"
run "$NOMAD" scaling policy list
grep -Eq '^[0-9a-f]+ +false +horizontal +Namespace:default,Job:demo-sim,Group:sim$' <<<"$out" ||
  fail "demo-sim's scaling policy is not listed, off"
ok "demo-sim's scaling policy is stored, off"
sed 's/enabled = false/enabled = true/' jobs/demo-sim.nomad.hcl >"$OPS/demo-sim-autoscaled.nomad.hcl"
TAIL=6 run "$LLMGW" jobs run "$OPS/demo-sim-autoscaled.nomad.hcl"
run "$NOMAD" scaling policy list
grep -Eq '^[0-9a-f]+ +true +horizontal +Namespace:default,Job:demo-sim,Group:sim$' <<<"$out" ||
  fail "demo-sim's scaling policy is not on after enabled = true"
ok "enabled = true turns demo-sim's scaling policy on"
NOMAD_TOKEN=$MGMT_TOKEN run "$NOMAD" acl policy apply -namespace default -job nomad-autoscaler nomad-autoscaler "$REPO/docs/operating/nomad-autoscaler.policy.hcl"
ok "the autoscaler's ACL policy applies to its job's workload identity"
# No autoscaler runs here (its image is not on this host): the policy
# stays on with nothing acting on it. Turn it off again for what follows.
TAIL=6 run "$LLMGW" jobs run jobs/demo-sim.nomad.hcl
until_ok "demo-sim's 4 replicas exact after the policy is off again" 90 exact_replicas 4

log "== 9c. scale from zero: a router holds a request while Nomad starts the group"
NOMAD_TOKEN=$MGMT_TOKEN run "$NOMAD" acl policy apply -description "llmgw router" llmgw-router "$REPO/docs/operating/llmgw-router-scale.policy.hcl"
NOMAD_TOKEN=$MGMT_TOKEN run "$NOMAD" acl token create -name llmgw-router -policy llmgw-router -json
SCALE_TOKEN=$(jq -r .SecretID <<<"$out")
[[ $SCALE_TOKEN =~ ^[0-9a-f-]{36}$ ]] || fail "acl token create gave no Secret ID for the router's scale token"
ok "the router's scale token: read-job and scale-job"
# The routers of section 4 run as a Nomad job whose variables carry no
# nomad block, so this router runs beside them as a process with the
# guide's config; idle_timeout is 20s here, where the guide says 30m.
ZERO_PORT=${ZERO_PORT:-18090}
ZERO_ADMIN=127.0.0.1:$((ZERO_PORT + 1))
cat >"$OPS/router-zero.hcl" <<EOF
listen        = "127.0.0.1:$ZERO_PORT"
admin_listen  = "$ZERO_ADMIN"
ingest_listen = "127.0.0.1:$((ZERO_PORT + 2))"
consul {
  address  = "$CONSUL_HTTP_ADDR"
  services = ["vllm"]
}
model "sim-model" {
  sim = true
}
nomad {
  address = "$NOMAD_ADDR"
  token   = "$SCALE_TOKEN"
  scale_from_zero "sim-model" {
    job          = "demo-sim"
    group        = "sim"
    idle_timeout = "20s"
  }
}
EOF
"$OPS/bin/llmgw-router" -config "$OPS/router-zero.hcl" >"$OPS/router-zero.log" 2>&1 &
zero_pid=$!
pids+=("$zero_pid")
# scale_is STATE: the status page shows sim-model's scale-from-zero state as STATE.
scale_is() { [[ $(curl -fs "http://$ZERO_ADMIN/admin/status" | grep -o 'data-scale="[a-z]*"' | head -1) == "data-scale=\"$1\"" ]]; }
# desired_is N: Nomad's scale status wants N of demo-sim's sim group.
desired_is() { [[ $(curl -fs -H "X-Nomad-Token: $NOMAD_TOKEN" "$NOMAD_ADDR/v1/job/demo-sim/scale" | jq -r .TaskGroups.sim.Desired) == "$1" ]]; }
until_ok "the scale-from-zero router is up and shows sim-model warm" 60 scale_is warm
# A scaling block on the group needs min = 0 (the guide says so).
sed 's/min     = 1/min     = 0/' jobs/demo-sim.nomad.hcl >"$OPS/demo-sim-zero.nomad.hcl"
grep -q 'min     = 0' "$OPS/demo-sim-zero.nomad.hcl" || fail "demo-sim's scaling block has no 'min     = 1' to lower"
TAIL=6 run "$LLMGW" jobs run "$OPS/demo-sim-zero.nomad.hcl"
TAIL=4 run "$NOMAD" job scale demo-sim sim 0
until_ok "the status page shows sim-model cold at zero replicas" 90 scale_is cold
run curl -s -m 240 -o "$OPS/zero.body" -w '%{http_code}' -H 'Content-Type: application/json' -H 'X-Request-Id: replay-cold-1' \
  -d '{"model":"sim-model","prompt":"a request for a model at zero","max_tokens":4}' "http://127.0.0.1:$ZERO_PORT/v1/completions"
[[ $out == 200 ]] || fail "the held request got $out: $(head -c 300 "$OPS/zero.body")"
ok "the request for sim-model at zero was held and answered 200 once a replica came up"
desired_is 1 || fail "demo-sim's sim group does not want 1 replica after the cold start"
scale_is warm || fail "the status page does not show sim-model warm after the answer"
ok "the router scaled the group to 1 and the page shows sim-model warm"
run "$NOMAD" job scaling-events -verbose demo-sim
grep -q 'llmgw-router: a request for sim-model found no replica' <<<"$out" || fail "no scaling event with the router's message"
ok "nomad job scaling-events lists the router's scale-up"
grep -q 'cold start: scale.*request_id=replay-cold-1.*changed=true' "$OPS/router-zero.log" ||
  fail "the router did not log its scale call with the request's id"
ok "the router logged its scale call with the request's id"
until_ok "the idle group goes back to zero after idle_timeout" 120 desired_is 0
until_ok "the status page shows sim-model cold again" 90 scale_is cold
kill "$zero_pid"
wait "$zero_pid" || true
TAIL=6 run "$LLMGW" jobs run jobs/demo-sim.nomad.hcl
until_ok "demo-sim back at 4 exact replicas after scale from zero" 120 exact_replicas 4

log "== 10. rolling upgrade of the plugin (tasks survive)"
allocs_before=$("$NOMAD" job allocs -json demo-sim | jq -r '[.[] | select(.ClientStatus == "running") | .ID] | sort | join(",")')
engines_before=$(pgrep -f "^$OPS/bin/vllm-sim" | sort | tr '\n' ',')
# Replicas holding blocks now come back by replay; idle ones (no KV event
# yet) are announced empty once their replay comes back with nothing.
held=$(replicas | jq -c '[.replicas[] | select(.gpu_blocks > 0) | .id] | sort')
idle=$(replicas | jq -c '[.replicas[] | select(.gpu_blocks == 0) | .id] | sort')
[[ -n $engines_before ]] || fail "no engine processes"
loop_out=$OPS/traffic.out
(
  end=$((SECONDS + 40))
  while ((SECONDS < end)); do
    curl -s -m 20 -o /dev/null -w '%{http_code}\n' "http://$ROUTER/v1/chat/completions" \
      -H "Authorization: Bearer $CLIENT_KEY" -H 'Content-Type: application/json' \
      -d '{"model": "sim-model", "max_tokens": 8, "messages": [{"role": "user", "content": "during the plugin upgrade"}]}'
    sleep 0.2
  done
) >"$loop_out" &
loop_pid=$!
pids+=("$loop_pid")
run install -m 0755 "$BIN/nomad-driver-vllm" "$OPS/plugins/nomad-driver-vllm"
log "\$ systemctl restart nomad   # here: SIGTERM to the agent, then start it again"
kill -TERM "$agent_pid"
wait "$agent_pid" || true
start_agent
until_ok "the node is ready again after the agent restart" 120 node_ready
allocs_running() {
  [[ $("$NOMAD" job allocs -json demo-sim | jq -r '[.[] | select(.ClientStatus == "running") | .ID] | sort | join(",")') == "$allocs_before" ]]
}
until_ok "the same 4 demo-sim allocations run after the restart" 60 allocs_running
engines_after=$(pgrep -f "^$OPS/bin/vllm-sim" | sort | tr '\n' ',')
[[ $engines_after == "$engines_before" ]] || fail "engine pids changed: $engines_before -> $engines_after"
ok "the engine processes are the same ($engines_after)"
first=$(cut -d, -f1 <<<"$allocs_before")
recovered() { grep -q "task recovered: .*task_id=$first" "$OPS/nomad.log"; }
until_ok "the client log shows \"task recovered\" for alloc $first" 30 recovered
# The driver holds a recovered task's events until the restarted client
# calls for the task, when it has a handler for them.
recovery_events() {
  out=$("$NOMAD" alloc status "$first" 2>&1) &&
    grep -q 'recovered after plugin restart' <<<"$out" && grep -q 'KV events resumed on ipc sockets in' <<<"$out"
}
until_ok "nomad alloc status $first shows the recovery events" 30 recovery_events
printf '%s\n' "$out" | grep -E 'recovered after plugin restart|KV events resumed' | sed 's/^/    /'
if grep -q 'no handler registered for event' "$OPS/nomad.log"; then
  fail "the client dropped driver events: $(grep -c 'no handler registered for event' "$OPS/nomad.log") times 'no handler registered for event'"
fi
ok "the client log has no 'no handler registered for event'"
held_exact() { replicas | jq -e --argjson held "$held" '[.replicas[] | select(.mode == "exact") | .id] as $e | $held - $e | length == 0'; }
until_ok "every replica that held blocks before the restart is exact again ($held)" 60 held_exact
until_ok "every replica is exact after the restart, the idle ones too ($idle)" 60 exact_replicas 4
log "modes after the plugin upgrade: $(replicas | jq -c '[.replicas[] | {id: .id[0:8], mode, gpu_blocks}]')"
wait "$loop_pid" || true
total=$(wc -l <"$loop_out")
good=$(grep -c '^200$' "$loop_out" || true)
log "traffic during the plugin upgrade: $good of $total requests 200"
((total > 0 && good == total)) || fail "requests failed during the plugin upgrade: $(sort "$loop_out" | uniq -c | tr '\n' ' ')"
ok "no request failed during the plugin upgrade"

log "== 11. rolling upgrade of the routers"
run install -m 0755 "$BIN/llmgw-router" "$OPS/bin/llmgw-router-next"
vars_next=("${ROUTER_VARS[@]::${#ROUTER_VARS[@]}-1}" router_command=/opt/llmgw/bin/llmgw-router-next)
log "\$ nomad job plan ${vars_next[*]} jobs/llmgw-router.nomad.hcl"
out=$("$NOMAD" job plan "${vars_next[@]}" jobs/llmgw-router.nomad.hcl 2>&1) || true
printf '%s\n' "$out" | grep -E 'command|Task Group' | sed 's/^/    /'
grep -q 'create/destroy update' <<<"$out" || fail "the plan shows no destructive update"
ok "the plan replaces the router instance by instance"
TAIL=6 run "$NOMAD" job run "${vars_next[@]}" jobs/llmgw-router.nomad.hcl
grep -q 'Deployment completed successfully' <<<"$out" || fail "router upgrade did not succeed"
ok "router upgrade deployment successful"
until_ok "the new router passes its check" 60 bash -c "curl -fs 'http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing' | jq -e 'length == 1'"
ROUTER=$(router_addr)
ADMIN=$(curl -fs "http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing" | jq -r '.[0] | "\(.Service.Address):\(.Service.Meta["llmgw-admin-port"])"')
listed() { replicas | jq -e '[.replicas[] | select(.model == "sim-model" and .healthy)] | length == 4'; }
until_ok "the new router lists the 4 replicas" 60 listed
until_ok "the new router has every replica that held blocks exact (the drivers' snapshots)" 60 held_exact
log "modes on the new router: $(replicas | jq -c '[.replicas[] | {id: .id[0:8], mode, gpu_blocks}]')"
run complete "$ROUTER"
ok "the upgraded router serves"

log "== 11a. tracing (section 13 of the guide): spans to an OTLP/HTTP receiver"
OTLP_PORT=${OTLP_PORT:-14318}
TRACE_ID=4bf92f3577b34da6a3ce929d0e0e4736
python3 "$REPO/docs/operating/otlp.py" serve "$OTLP_PORT" "$OPS/otlp.bin" &
pids+=("$!")
until_ok "the OTLP receiver listens on $OTLP_PORT" 10 curl -fs "http://127.0.0.1:$OTLP_PORT/health"
TAIL=6 run "$LLMGW" jobs run "${vars_next[@]}" -var "tracing_endpoint=http://127.0.0.1:$OTLP_PORT/v1/traces" \
  -var tracing_sample_ratio=0.05 jobs/llmgw-router.nomad.hcl
grep -q 'successful' <<<"$out" || fail "the traced router's deployment did not succeed"
until_ok "the traced router passes its check" 60 bash -c "curl -fs 'http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing' | jq -e 'length == 1'"
ROUTER=$(router_addr)
ADMIN=$(curl -fs "http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing" | jq -r '.[0] | "\(.Service.Address):\(.Service.Meta["llmgw-admin-port"])"')
until_ok "the traced router lists the 4 replicas" 60 listed
traced() {
  curl -fsS -m 30 "http://$ROUTER/v1/chat/completions" -H "Authorization: Bearer $CLIENT_KEY" \
    -H 'Content-Type: application/json' -H "traceparent: 00-$TRACE_ID-00f067aa0ba902b7-01" \
    -d '{"model": "sim-model", "max_tokens": 16, "messages": [{"role": "user", "content": "Where did this request go?"}]}'
}
run traced
jq -e '.choices[0].message.content | length > 0' <<<"$out" >/dev/null || fail "no completion from the traced router"
until_ok "the router's spans of trace $TRACE_ID reached the receiver" 30 python3 "$REPO/docs/operating/otlp.py" has "$OPS/otlp.bin" "$TRACE_ID"

log "== 12. draining the node"
TAIL=6 run "$NOMAD" node drain -enable -self -yes -deadline 1m
no_vllm() { curl -fs "http://$CONSUL_HTTP_ADDR/v1/catalog/service/vllm" | jq -e 'length == 0'; }
until_ok "the drained node's replicas left Consul" 60 no_vllm
TAIL=4 run "$NOMAD" node drain -disable -self -yes
TAIL=4 run "$NOMAD" node eligibility -enable -self
until_ok "the router is back after the drain" 120 bash -c "curl -fs 'http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing' | jq -e 'length == 1'"
ROUTER=$(router_addr)
ADMIN=$(curl -fs "http://$CONSUL_HTTP_ADDR/v1/health/service/llmgw-router?passing" | jq -r '.[0] | "\(.Service.Address):\(.Service.Meta["llmgw-admin-port"])"')
until_ok "the 4 replicas are placed again and exact" 120 exact_replicas 4
run complete "$ROUTER"
ok "traffic after the drain"

log "== 13. disaggregated prefill and decode (jobs/demo-sim-pd.nomad.hcl)"
# The P/D fleet serves sim-model too: stop the aggregated one first, or its
# replicas would take part in the decode step.
TAIL=2 run "$NOMAD" job stop -detach demo-sim
until_ok "the aggregated replicas left the router" 60 bash -c "curl -fs -H 'Authorization: Bearer $ADMIN_TOKEN' http://$ADMIN/admin/replicas | jq -e '.replicas | length == 0'"
TAIL=8 run "$NOMAD" job run jobs/demo-sim-pd.nomad.hcl
grep -q 'Deployment completed successfully' <<<"$out" || fail "demo-sim-pd deployment did not succeed"
ok "nomad job run: demo-sim-pd deployment successful"
pd_in_consul() {
  curl -fs "http://$CONSUL_HTTP_ADDR/v1/health/service/vllm?passing" |
    jq -e '[.[].Service.Meta["llmgw-role"]] | sort == ["decode", "decode", "prefill"]'
}
until_ok "Consul has 1 prefill and 2 decode replicas, each passing its check" 60 pd_in_consul
run bash -c "curl -fs 'http://$CONSUL_HTTP_ADDR/v1/health/service/vllm?passing' | jq -c '.[] | {replica: .Service.Meta[\"llmgw-replica\"], role: .Service.Meta[\"llmgw-role\"], port: .Service.Port}'"
pd_replicas() { replicas | jq -e '[.replicas[] | select(.model == "sim-model" and .mode == "exact" and .healthy) | .role] | sort == ["decode", "decode", "prefill"]'; }
until_ok "the router lists the 3 replicas with their roles, exact and healthy" 60 pd_replicas
TAIL=6 LLMGW_ADMIN_TOKEN=$ADMIN_TOKEN run "$LLMGW" status
grep -Eq '/sim +sim-model +prefill +exact' <<<"$out" && (($(grep -Ec '/sim +sim-model +decode +exact' <<<"$out") == 2)) ||
  fail "llmgw status does not show 1 prefill and 2 decode replicas"
ok "llmgw status shows each replica's role"
for a in $("$NOMAD" job allocs -json demo-sim-pd | jq -r '.[] | select(.ClientStatus == "running") | "\(.ID):\(.TaskGroup)"'); do
  TAIL=20 run "$NOMAD" alloc status "${a%%:*}"
  grep -q 'model ready' <<<"$out" || fail "alloc ${a%%:*}: no \"model ready\" event"
  grep -Eq 'Deployment Health += healthy' <<<"$out" || fail "alloc ${a%%:*}: deployment health not healthy"
  grep -q "disaggregated: role ${a#*:}, NIXL side channel on port" <<<"$out" || fail "alloc ${a%%:*}: no disaggregated event for role ${a#*:}"
done
ok "nomad alloc status shows each shard healthy, with its role, side channel and \"model ready\""
prefill_id=$(replicas | jq -r '.replicas[] | select(.role == "prefill") | .id')
# engine_port REPLICA: the engine's API port, from Consul.
engine_port() {
  curl -fs "http://$CONSUL_HTTP_ADDR/v1/catalog/service/vllm" |
    jq -r --arg r "$1" '.[] | select(.ServiceMeta["llmgw-replica"] == $r) | .ServicePort'
}
# pulls REPLICA: how many NIXL pulls the engine made (vllm:nixl_num_descriptors_count).
pulls() { curl -fs "http://127.0.0.1:$(engine_port "$1")/metrics" | awk '/^vllm:nixl_num_descriptors_count/ {print $2}'; }
# Long enough (some 300 tokens) that the blocks the decode replica pulled
# are over pd_skip_prefill_fraction (0.9) of it, whatever its last block.
PD_PROMPT=$(for i in 1 2 3 4 5 6 7 8; do printf 'Part %s: a disaggregated fleet prefills this prompt on one replica and decodes its answer on another, which pulls the blocks. ' "$i"; done)
pd_stream() {
  curl -fsS -N -m 60 -D "$OPS/stream.hdr" "http://$ROUTER/v1/chat/completions" \
    -H "Authorization: Bearer $CLIENT_KEY" -H 'Content-Type: application/json' \
    -d '{"model": "sim-model", "stream": true, "max_tokens": 16, "messages": [{"role": "user", "content": "'"$PD_PROMPT"'"}]}' >"$OPS/stream.body"
}
run pd_stream
TAIL=20 run grep -i '^x-llmgw' "$OPS/stream.hdr"
[[ $(header X-Llmgw-Routing-Mode) == disaggregated ]] || fail "routing mode $(header X-Llmgw-Routing-Mode), want disaggregated"
[[ $(header X-Llmgw-Prefill-Replica) == "$prefill_id" ]] || fail "X-Llmgw-Prefill-Replica '$(header X-Llmgw-Prefill-Replica)', want $prefill_id"
[[ $(grep '^data:' "$OPS/stream.body" | tail -1) == 'data: [DONE]' ]] || fail "the stream did not end with [DONE]"
decode_id=$(header X-Llmgw-Replica)
ok "a streamed completion is served disaggregated: prefill on $prefill_id, decode on $decode_id"
run pulls "$decode_id"
((${out:-0} >= 1)) || fail "the decode engine made no NIXL pull"
ok "the decode engine pulled the prompt's blocks (vllm:nixl_num_descriptors_count $out)"
run pd_stream
TAIL=20 run grep -i '^x-llmgw' "$OPS/stream.hdr"
[[ -z $(header X-Llmgw-Prefill-Replica) && $(header X-Llmgw-Replica) == "$decode_id" ]] ||
  fail "the repeated prompt went to $(header X-Llmgw-Replica), prefill replica '$(header X-Llmgw-Prefill-Replica)'; want $decode_id alone"
run bash -c "curl -fs -H 'Authorization: Bearer $ADMIN_TOKEN' http://$ADMIN/metrics | grep '^llmgw_pd_requests_total'"
grep -q 'path="decode_cached"} 1' <<<"$out" || fail "no decode_cached request counted"
ok "the repeated prompt skips the remote prefill: its decode replica caches it (path decode_cached)"

log "== 13a. mid-stream migration (P/D): the stream's decode engine is killed"
stream_and_kill
[[ $(header X-Llmgw-Routing-Mode) == disaggregated && $killed != "$prefill_id" ]] ||
  fail "the stream was not disaggregated: mode $(header X-Llmgw-Routing-Mode), replica $killed"
log "stream decoded on $killed, prefilled on $(header X-Llmgw-Prefill-Replica)"
stream_whole
ok "the stream completed after its decode engine was killed: [DONE], no error event, $STREAM_TOKENS tokens"
until_ok "the router logged \"stream migrated\" from the decode replica $killed" 30 migrated "$killed"
log "$(migrated "$killed")"
until_ok "Nomad restarted the killed decode task, its engine ready again" 90 restarted "$killed"
until_ok "the killed decode replica is back: 3 replicas exact and healthy" 90 pd_replicas

log "== 14. clean up"
TAIL=2 run "$NOMAD" job stop -detach demo-sim-pd
TAIL=2 run "$NOMAD" job stop -detach llmgw-router
none_running() { curl -fs -H "X-Nomad-Token: ${MGMT_TOKEN:-}" "$NOMAD_ADDR/v1/allocations" | jq -e 'map(select(.ClientStatus == "running" or .ClientStatus == "pending")) | length == 0'; }
until_ok "every allocation has stopped" 60 none_running
log "replay passed: $passed checks"
