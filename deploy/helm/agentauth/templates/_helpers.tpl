{{/* Chart name, truncated to the 63 characters a DNS label allows. */}}
{{- define "agentauth.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name. */}}
{{- define "agentauth.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "agentauth.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agentauth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agentauth.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "agentauth.labels" -}}
helm.sh/chart: {{ include "agentauth.chart" . }}
{{ include "agentauth.selectorLabels" . }}
app.kubernetes.io/version: {{ (default .Chart.AppVersion .Values.image.tag) | toString | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "agentauth.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "agentauth.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "agentauth.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}

{{/* Fixed mount points inside the container. */}}
{{- define "agentauth.dataDir" -}}/var/lib/agentauth{{- end }}
{{- define "agentauth.caDir" -}}/etc/agentauth/ca{{- end }}
{{- define "agentauth.caFile" -}}/etc/agentauth/ca/ca.crt{{- end }}
{{- define "agentauth.configDir" -}}/etc/agentauth/config{{- end }}

{{- define "agentauth.hasDatabase" -}}
{{- if or .Values.database.url .Values.database.existingSecret }}true{{ end }}
{{- end }}

{{/* Whether callers can authenticate: an API key, OIDC, or hybrid mode (config or extraEnv). */}}
{{- define "agentauth.hasAuth" -}}
{{- $env := .Values.backend.extraEnv }}
{{- $envNames := list }}
{{- if kindIs "map" $env }}{{ $envNames = keys $env }}{{ end }}
{{- if kindIs "slice" $env }}{{ range $env }}{{ if kindIs "map" . }}{{ $envNames = append $envNames (toString .name) }}{{ end }}{{ end }}{{ end }}
{{- $hybrid := dig "auth" "hybrid" "remoteUrl" "" (default (dict) .Values.backend.config) }}
{{- if or .Values.apiKey.existingSecret .Values.backend.oidc.enabled $hybrid (has "SERVICE_HYBRID_REMOTE_URL" $envNames) (has "SERVICE_API_KEY" $envNames) (has "SERVICE_API_KEY_FILE" $envNames) }}true{{ end }}
{{- end }}

{{- define "agentauth.hasCaBundle" -}}
{{- if or .Values.backend.caBundle.configMap .Values.backend.caBundle.secret }}true{{ end }}
{{- end }}

{{/*
Checks that stop a wrong configuration from rendering. Included by the Deployment.
*/}}
{{- define "agentauth.validate" -}}
{{- if not (include "agentauth.hasAuth" .) }}
{{- fail "agentauth needs a way to authenticate callers: set apiKey.existingSecret to a Secret holding an API key of at least 16 characters (kubectl create secret generic agentauth-api-key --from-literal=api-key=\"$(openssl rand -hex 32)\"), or backend.oidc.enabled=true with backend.oidc.issuer, clientId, redirectUri and existingSecret. The chart never runs local mode in a pod: its key file would sit in the pod's data folder, out of reach." }}
{{- end }}
{{- if and .Values.autoscaling.enabled (not (include "agentauth.hasDatabase" .)) }}
{{- fail "autoscaling.enabled needs a database: several agentauth instances must share one PostgreSQL database. Set database.url or database.existingSecret." }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not .Values.management.enabled) }}
{{- fail "serviceMonitor.enabled scrapes the management port: set management.enabled=true" }}
{{- end }}
{{- if and .Values.management.enabled (eq (int .Values.management.port) (int .Values.containerPort)) }}
{{- fail "management.port must differ from containerPort" }}
{{- end }}
{{- if and .Values.public.enabled (or (eq (int .Values.public.port) (int .Values.containerPort)) (and .Values.management.enabled (eq (int .Values.public.port) (int .Values.management.port)))) }}
{{- fail "public.port must differ from containerPort and management.port" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not (include "agentauth.hasDatabase" .)) }}
{{- fail (printf "replicaCount is %d but no database is configured: several agentauth instances must share one PostgreSQL database (they cannot share the SQLite file in their data directory). Set database.url or database.existingSecret, or set replicaCount to 1." (int .Values.replicaCount)) }}
{{- end }}
{{- if and .Values.database.url .Values.database.existingSecret }}
{{- fail "set either database.url or database.existingSecret, not both" }}
{{- end }}
{{- if hasKey .Values.backend.oidc "clientSecret" }}
{{- fail "backend.oidc.clientSecret is not accepted: the OIDC client secret is never a plain value. Create a Secret and set backend.oidc.existingSecret (and backend.oidc.existingSecretKey)." }}
{{- end }}
{{- if .Values.backend.oidc.enabled }}
{{- $_ := required "backend.oidc.enabled is true: backend.oidc.issuer is required" .Values.backend.oidc.issuer }}
{{- $_ := required "backend.oidc.enabled is true: backend.oidc.clientId is required" .Values.backend.oidc.clientId }}
{{- $_ := required "backend.oidc.enabled is true: backend.oidc.redirectUri is required" .Values.backend.oidc.redirectUri }}
{{- $_ := required "backend.oidc.enabled is true: backend.oidc.existingSecret (a Secret holding the client secret) is required" .Values.backend.oidc.existingSecret }}
{{- end }}
{{- if and .Values.backend.caBundle.configMap .Values.backend.caBundle.secret }}
{{- fail "backend.caBundle: set either configMap or secret, not both" }}
{{- end }}
{{- if and (include "agentauth.hasCaBundle" .) (not .Values.backend.caBundle.key) }}
{{- fail "backend.caBundle.key is required (the key of the PEM bundle in the ConfigMap or Secret)" }}
{{- end }}
{{- end }}

{{/*
Names of the environment variables the chart sets itself; backend.extraEnv may not repeat them.
*/}}
{{- define "agentauth.managedEnvNames" -}}
{{- $names := list "SERVICE_HOST" "SERVICE_PORT" "SERVICE_DATA_DIR" "SERVICE_LOG_LEVEL" "SERVICE_OIDC_ENABLED" }}
{{- if .Values.management.enabled }}{{ $names = append $names "SERVICE_MANAGEMENT_PORT" }}{{ end }}
{{- if .Values.backend.config }}{{ $names = append $names "SERVICE_CONFIG" }}{{ end }}
{{- if .Values.backend.oidc.enabled }}
{{- $names = concat $names (list "SERVICE_OIDC_ISSUER" "SERVICE_OIDC_CLIENT_ID" "SERVICE_OIDC_REDIRECT_URI" "SERVICE_OIDC_CLIENT_SECRET" "SERVICE_OIDC_CLIENT_SECRET_FILE") }}
{{- end }}
{{- if include "agentauth.hasCaBundle" . }}{{ $names = append $names "SERVICE_OIDC_CA_FILE" }}{{ end }}
{{- if include "agentauth.hasDatabase" . }}{{ $names = append $names "SERVICE_DATABASE_URL" }}{{ end }}
{{- if .Values.apiKey.existingSecret }}{{ $names = append $names "SERVICE_API_KEY" }}{{ end }}
{{- if .Values.audit.signingKey.existingSecret }}{{ $names = concat $names (list "SERVICE_AUDIT_SIGNING_KEY" "SERVICE_AUDIT_SIGNING_KEY_FILE") }}{{ end }}
{{- if .Values.agentTokens.signingKey.existingSecret }}{{ $names = concat $names (list "SERVICE_AGENT_TOKENS_SIGNING_KEY" "SERVICE_AGENT_TOKENS_SIGNING_KEY_FILE") }}{{ end }}
{{- if .Values.agentTokens.issuer }}{{ $names = append $names "SERVICE_AGENT_TOKENS_ISSUER" }}{{ end }}
{{- if .Values.public.enabled }}{{ $names = append $names "SERVICE_PUBLIC_PORT" }}{{ end }}
{{- join "," $names }}
{{- end }}

{{/* backend.extraEnv, a map or a list, rendered as container env entries. */}}
{{- define "agentauth.extraEnv" -}}
{{- $managed := splitList "," (include "agentauth.managedEnvNames" .) }}
{{- $env := .Values.backend.extraEnv }}
{{- if kindIs "map" $env }}
{{- range $name, $value := $env }}
{{- if has $name $managed }}
{{- fail (printf "backend.extraEnv sets %s, which the chart already sets from its own values" $name) }}
{{- end }}
- name: {{ $name }}
  value: {{ toString $value | quote }}
{{- end }}
{{- else if kindIs "slice" $env }}
{{- range $env }}
{{- if not (and (kindIs "map" .) .name) }}
{{- fail "backend.extraEnv as a list must hold EnvVar objects with a name" }}
{{- end }}
{{- if has .name $managed }}
{{- fail (printf "backend.extraEnv sets %s, which the chart already sets from its own values" .name) }}
{{- end }}
{{- end }}
{{- $items := list }}
{{- range $env }}
{{- $item := deepCopy . }}
{{- if hasKey $item "value" }}{{ $_ := set $item "value" (toString $item.value) }}{{ end }}
{{- $items = append $items $item }}
{{- end }}
{{- with $items }}
{{ toYaml . }}
{{- end }}
{{- else if $env }}
{{- fail "backend.extraEnv must be a map (NAME: value) or a list of EnvVar objects" }}
{{- end }}
{{- end }}
