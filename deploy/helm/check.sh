#!/usr/bin/env bash
# Lints and renders the Helm chart deploy/helm/agentauth and checks the rendered
# manifests. Runs from any directory; safe to run again and again.
#
# helm is not downloaded: it is built from source through the Go module proxy,
# from the separate module tools/helm (pinned in tools/helm/go.mod), together
# with tools/helm/chartcheck, which decodes the manifests strictly into the
# Kubernetes API types and prints facts to assert on. Both binaries are cached in
#   ${AGENTAUTH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentauth-tools}
# keyed on the tools module's content, so only the first run builds them
# (a few minutes on 2 cores); later runs take seconds.
#
# Last line: "helm: N passed, M failed"; exit status 1 when M > 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

CHART=deploy/helm/agentauth
FULL_VALUES=$CHART/ci/full-values.yaml
TOOLS=tools/helm

# The tools module is built as it is pinned, never through a workspace of the repo.
export GOWORK=off GOFLAGS=-mod=readonly

die() { echo "check.sh: $*" >&2; exit 1; }
command -v go >/dev/null || die "go is not on PATH (needed to build helm from $TOOLS)"
[ -f "$TOOLS/go.mod" ] || die "$TOOLS/go.mod is missing"

# ---------------------------------------------------------------- build the tools
helm_version=$(go -C "$TOOLS" list -m -f '{{.Version}}' helm.sh/helm/v3) ||
	die "cannot resolve helm.sh/helm/v3 in $TOOLS/go.mod"
k8s_version=$(go -C "$TOOLS" list -m -f '{{.Version}}' k8s.io/client-go) ||
	die "cannot resolve k8s.io/client-go in $TOOLS/go.mod"
# client-go v0.X.Y goes with Kubernetes 1.X: helm's default "cluster" version, as
# helm's own Makefile sets it.
k8s_minor=$(echo "$k8s_version" | cut -d. -f2)

cache_root=${AGENTAUTH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentauth-tools}
key=$( (go env GOVERSION GOOS GOARCH; cat "$TOOLS/go.mod" "$TOOLS/go.sum" "$TOOLS"/chartcheck/*.go) |
	sha256sum | cut -c1-16)
bin_dir=$cache_root/helm-$helm_version-$key
HELM=$bin_dir/helm
CHARTCHECK=$bin_dir/chartcheck

if [ ! -x "$HELM" ] || [ ! -x "$CHARTCHECK" ]; then
	echo "building helm $helm_version and chartcheck from $TOOLS (first run only; takes a few minutes)..."
	start=$(date +%s)
	mkdir -p "$cache_root"
	tmp_bin=$(mktemp -d "$cache_root/.build.XXXXXX")
	ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
	for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
		ldflags="$ldflags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
	done
	if ! CGO_ENABLED=0 go -C "$TOOLS" build -trimpath -ldflags "$ldflags" -o "$tmp_bin/helm" helm.sh/helm/v3/cmd/helm ||
		! go -C "$TOOLS" build -trimpath -o "$tmp_bin/chartcheck" ./chartcheck; then
		rm -rf "$tmp_bin"
		die "building the tools in $TOOLS failed"
	fi
	# Publish atomically: a concurrent run sees either nothing or both binaries.
	rm -rf "$bin_dir"
	mv "$tmp_bin" "$bin_dir" 2>/dev/null || rm -rf "$tmp_bin"
	echo "built in $(($(date +%s) - start))s into $bin_dir"
fi
"$HELM" version --short >/dev/null || die "$HELM does not run"

# helm must not read or write the user's own helm settings.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HELM_CACHE_HOME=$work/helm-cache HELM_CONFIG_HOME=$work/helm-config HELM_DATA_HOME=$work/helm-data

# ---------------------------------------------------------------- check helpers
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() {
	failed=$((failed + 1))
	echo "FAIL $1" >&2
	[ -z "${2:-}" ] || sed 's/^/     | /' "$2" | head -n 30 >&2
}

# has FACTS LINE...: every LINE is exactly a line of FACTS.
has() {
	local facts=$1 line
	shift
	for line in "$@"; do
		if grep -qxF -- "$line" "$work/$facts.facts"; then
			pass "$facts: $line"
		else
			fail "$facts: expected the line '$line' in the rendered manifests" "$work/$facts.facts"
		fi
	done
}
# lacks FACTS REGEX...: no line of FACTS matches REGEX.
lacks() {
	local facts=$1 re
	shift
	for re in "$@"; do
		if grep -qE -- "$re" "$work/$facts.facts"; then
			fail "$facts: nothing should match /$re/, but:" <(grep -E -- "$re" "$work/$facts.facts")
		else
			pass "$facts: nothing matches /$re/"
		fi
	done
}

# render NAME ARGS...: helm template into $work/NAME.yaml, facts into $work/NAME.facts.
render() {
	local name=$1
	shift
	if ! "$HELM" template rel "$CHART" --namespace agentauth "$@" >"$work/$name.yaml" 2>"$work/$name.err"; then
		fail "$name: helm template failed" "$work/$name.err"
		: >"$work/$name.facts"
		return
	fi
	pass "$name: helm template renders"
	if "$CHARTCHECK" <"$work/$name.yaml" >"$work/$name.facts" 2>"$work/$name.err"; then
		pass "$name: every manifest decodes strictly into its Kubernetes type"
	else
		fail "$name: manifests do not decode" "$work/$name.err"
	fi
}

# refuses NAME MESSAGE ARGS...: helm template must fail and say MESSAGE.
refuses() {
	local name=$1 message=$2
	shift 2
	if "$HELM" template rel "$CHART" "$@" >"$work/$name.yaml" 2>"$work/$name.err"; then
		fail "$name: rendered, but must be refused" "$work/$name.yaml"
	elif grep -qF -- "$message" "$work/$name.err"; then
		pass "$name: refused with '$message'"
	else
		fail "$name: failed without the message '$message'" "$work/$name.err"
	fi
}

lint() {
	local name=$1
	shift
	if "$HELM" lint --strict "$CHART" "$@" >"$work/lint-$name.out" 2>&1; then
		pass "helm lint --strict ($name)"
	else
		fail "helm lint --strict ($name)" "$work/lint-$name.out"
	fi
}

# ---------------------------------------------------------------- the checks
echo "helm $("$HELM" version --template '{{.Version}}'), chart $CHART"

# The smallest install that works: an API key from a Secret.
AUTH=(--set apiKey.existingSecret=agentauth-api-key)

lint api-key "${AUTH[@]}"
lint full-values -f "$FULL_VALUES"

# (a) no values at all: refused, saying what to set (never local mode in a pod).
refuses defaults "set apiKey.existingSecret to a Secret holding an API key"
refuses defaults "or backend.oidc.enabled=true"

# (b) an API key: one replica, SQLite in an emptyDir, OIDC off, the management
# listener on 9000 with the probes on it and a ClusterIP Service of its own.
render defaults "${AUTH[@]}"
has defaults \
	"kind Deployment/rel-agentauth" \
	"kind Service/rel-agentauth" \
	"kind ServiceAccount/rel-agentauth" \
	"replicas 1" \
	"env SERVICE_HOST=0.0.0.0" \
	"env SERVICE_PORT=8080" \
	"env SERVICE_DATA_DIR=/var/lib/agentauth" \
	"env SERVICE_OIDC_ENABLED=false" \
	"env SERVICE_MANAGEMENT_PORT=9000" \
	"env SERVICE_API_KEY<-secretKeyRef:agentauth-api-key/api-key" \
	"port http 8080" \
	"port management 9000" \
	"kind Service/rel-agentauth-management" \
	"service rel-agentauth-management ClusterIP port management 9000->management" \
	"service rel-agentauth ClusterIP port http 8080->http" \
	"volume data emptyDir" \
	"mount data /var/lib/agentauth rw" \
	"probe liveness GET /health/live port=management" \
	"probe readiness GET /health/ready port=management" \
	"pod.enableServiceLinks false" \
	"pod.runAsNonRoot true" \
	"pod.seccompProfile RuntimeDefault" \
	"container.runAsNonRoot true" \
	"container.readOnlyRootFilesystem true" \
	"container.allowPrivilegeEscalation false" \
	"container.capabilities.drop ALL" \
	"container.seccompProfile RuntimeDefault"
lacks defaults \
	'^kind (PodDisruptionBudget|Ingress|Secret|ConfigMap|PersistentVolumeClaim|ServiceMonitor|NetworkPolicy|HorizontalPodAutoscaler)/' \
	'^env SERVICE_(OIDC_CLIENT_SECRET|OIDC_ISSUER|DATABASE_URL|AUDIT_SIGNING_KEY|AGENT_TOKENS_|PUBLIC_PORT)' \
	'^service rel-agentauth [A-Za-z]+ port management' \
	'^kind Service/rel-agentauth-public' '^port public' \
	'^container\.capabilities\.add '

# (b) ci/full-values.yaml: OIDC, CA bundle, NODE_EXTRA_CA_CERTS, database, API key and
# signing keys from Secrets, three replicas, ingress.
render full -f "$FULL_VALUES"
has full \
	"replicas 3" \
	"image ghcr.io/agentauth/agentauth:1.2.3" \
	"env SERVICE_HOST=0.0.0.0" \
	"env SERVICE_OIDC_ENABLED=true" \
	"env SERVICE_OIDC_ISSUER=https://login.example.test/realms/agents" \
	"env SERVICE_OIDC_CLIENT_ID=agentauth-gateway" \
	"env SERVICE_OIDC_REDIRECT_URI=https://agentauth.example.test/auth/callback" \
	"env SERVICE_OIDC_CLIENT_SECRET<-secretKeyRef:agentauth-oidc/client-secret" \
	"env SERVICE_OIDC_CA_FILE=/etc/agentauth/ca/ca.crt" \
	"env NODE_EXTRA_CA_CERTS=/etc/agentauth/ca/ca.crt" \
	"env SERVICE_DATABASE_URL<-secretKeyRef:agentauth-db/database-url" \
	"env SERVICE_API_KEY<-secretKeyRef:agentauth-api-key/api-key" \
	"env SERVICE_AUDIT_SIGNING_KEY<-secretKeyRef:agentauth-audit-signing/signing-key" \
	"env SERVICE_AGENT_TOKENS_SIGNING_KEY<-secretKeyRef:agentauth-agent-token-signing/signing-key" \
	"env SERVICE_AGENT_TOKENS_ISSUER=https://tokens.agentauth.example.test" \
	"env SERVICE_PUBLIC_PORT=9100" \
	"port public 9100" \
	"kind Service/rel-agentauth-public" \
	"service rel-agentauth-public ClusterIP port public 9100->public" \
	"env SERVICE_LOG_LEVEL=debug" \
	"volume ca-bundle configMap:corp-ca ca-bundle.pem->ca.crt" \
	"mount ca-bundle /etc/agentauth/ca ro" \
	"probe liveness GET /health/live port=management" \
	"probe readiness GET /health/ready port=management" \
	"pod.runAsNonRoot true" \
	"container.runAsNonRoot true" \
	"container.readOnlyRootFilesystem true" \
	"container.capabilities.drop ALL" \
	"kind PodDisruptionBudget/rel-agentauth" \
	"pdb.minAvailable 1" \
	"kind Ingress/rel-agentauth"
# The client secret only ever arrives through the secretKeyRef: no env entry may
# carry it as a value, and the chart renders no Secret of its own here.
lacks full \
	'^env SERVICE_OIDC_CLIENT_SECRET(_FILE)?=' \
	'^kind Secret/'
if grep -nE -A1 'name: *"?SERVICE_OIDC_CLIENT_SECRET"?$' "$work/full.yaml" | grep -qE '^[0-9]+-[[:space:]]*value:'; then
	fail "full: SERVICE_OIDC_CLIENT_SECRET has a plain value in the raw output" "$work/full.yaml"
else
	pass "full: SERVICE_OIDC_CLIENT_SECRET has no plain value in the raw output"
fi

# A secret given as a plain value is refused, and is echoed nowhere.
sentinel="do-not-render-$$-s3cr3t"
refuses plain-secret "backend.oidc.clientSecret is not accepted" \
	-f "$FULL_VALUES" --set "backend.oidc.clientSecret=$sentinel"
if grep -qF -- "$sentinel" "$work/plain-secret.yaml" "$work/plain-secret.err"; then
	fail "plain-secret: the secret value appears in helm's output"
else
	pass "plain-secret: the secret value appears nowhere in helm's output"
fi

# Several replicas must share PostgreSQL.
refuses replicas-no-db "must share one PostgreSQL database" "${AUTH[@]}" --set replicaCount=3
refuses full-without-db "must share one PostgreSQL database" -f "$FULL_VALUES" --set database.existingSecret=
render replicas-db-url "${AUTH[@]}" --set replicaCount=2 --set database.url=postgres://agentauth@db:5432/agentauth
has replicas-db-url "replicas 2" "kind Secret/rel-agentauth-database" \
	"env SERVICE_DATABASE_URL<-secretKeyRef:rel-agentauth-database/url" \
	"kind PodDisruptionBudget/rel-agentauth"

# Other refusals with a message.
refuses oidc-without-secret "backend.oidc.existingSecret" \
	--set backend.oidc.enabled=true --set backend.oidc.issuer=https://idp.example.test \
	--set backend.oidc.clientId=c --set backend.oidc.redirectUri=https://a.example.test/cb
refuses extraenv-collision "backend.extraEnv sets SERVICE_HOST" "${AUTH[@]}" --set backend.extraEnv.SERVICE_HOST=127.0.0.1
refuses extraenv-management "backend.extraEnv sets SERVICE_MANAGEMENT_PORT" "${AUTH[@]}" --set backend.extraEnv.SERVICE_MANAGEMENT_PORT=9100
refuses ca-both "set either configMap or secret" "${AUTH[@]}" --set backend.caBundle.configMap=a --set backend.caBundle.secret=b
refuses hpa-no-db "autoscaling.enabled needs a database" "${AUTH[@]}" --set autoscaling.enabled=true
refuses monitor-no-management "serviceMonitor.enabled scrapes the management port" "${AUTH[@]}" \
	--set serviceMonitor.enabled=true --set management.enabled=false
refuses management-on-api-port "management.port must differ from containerPort" "${AUTH[@]}" --set management.port=8080
refuses public-on-management-port "public.port must differ" "${AUTH[@]}" --set public.enabled=true --set public.port=9000
refuses extraenv-agent-key "backend.extraEnv sets SERVICE_AGENT_TOKENS_SIGNING_KEY" "${AUTH[@]}" \
	--set agentTokens.signingKey.existingSecret=k --set backend.extraEnv.SERVICE_AGENT_TOKENS_SIGNING_KEY=x

# Hybrid mode through extraEnv is a way to authenticate too.
render hybrid --set backend.extraEnv.SERVICE_HYBRID_REMOTE_URL=https://centre.example.test
has hybrid "env SERVICE_HYBRID_REMOTE_URL=https://centre.example.test"

# The management listener off: both probes fall back to GET /health.
render management-off "${AUTH[@]}" --set management.enabled=false
has management-off "probe liveness GET /health port=http" "probe readiness GET /health port=http"
lacks management-off '^env SERVICE_MANAGEMENT_PORT' '^kind Service/rel-agentauth-management' '^port management'

# ServiceMonitor, NetworkPolicy and HPA on the full values.
render operated -f "$FULL_VALUES" --set serviceMonitor.enabled=true --set networkPolicy.enabled=true \
	--set autoscaling.enabled=true --set autoscaling.minReplicas=2 --set autoscaling.maxReplicas=6 \
	--set 'networkPolicy.managementFrom[0].namespaceSelector.matchLabels.kubernetes\.io/metadata\.name=monitoring'
has operated \
	"kind ServiceMonitor/rel-agentauth" \
	"servicemonitor.endpoint port=management path=/metrics" \
	"servicemonitor.selector app.kubernetes.io/component=management" \
	"kind NetworkPolicy/rel-agentauth" \
	"netpol.ingress port=http peers=0" \
	"netpol.ingress port=public peers=0" \
	"netpol.ingress port=management peers=1" \
	"kind HorizontalPodAutoscaler/rel-agentauth" \
	"hpa Deployment/rel-agentauth min=2 max=6" \
	"kind PodDisruptionBudget/rel-agentauth"
lacks operated '^replicas '

# extraEnv as a list of EnvVar objects, a CA bundle from a Secret, a PVC.
render variants "${AUTH[@]}" --set 'backend.extraEnv[0].name=NODE_EXTRA_CA_CERTS' \
	--set 'backend.extraEnv[0].value=/etc/agentauth/ca/ca.crt' \
	--set backend.caBundle.secret=corp-ca --set persistence.enabled=true
has variants \
	"env NODE_EXTRA_CA_CERTS=/etc/agentauth/ca/ca.crt" \
	"volume ca-bundle secret:corp-ca ca.crt->ca.crt" \
	"mount ca-bundle /etc/agentauth/ca ro" \
	"kind PersistentVolumeClaim/rel-agentauth-data" \
	"volume data pvc:rel-agentauth-data"

echo "helm: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
