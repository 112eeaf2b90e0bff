{{/*
Names, labels and the values the templates share. The paths inside the pod are the kustomize
base's (deploy/kubernetes/base), so the two render the same workload.
*/}}

{{- define "cmdb-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "cmdb-exporter.fullname" -}}
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

{{- define "cmdb-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cmdb-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "cmdb-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "cmdb-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: cmdb-exporter
{{- end }}

{{- define "cmdb-exporter.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The port the container listens on: the exporter's default, fixed (probes and monitors name it "http"). */}}
{{- define "cmdb-exporter.port" -}}9873{{- end }}
{{- define "cmdb-exporter.configDir" -}}/etc/cmdb-exporter/config{{- end }}
{{- define "cmdb-exporter.secretsDir" -}}/etc/cmdb-exporter/secrets{{- end }}
{{- define "cmdb-exporter.webDir" -}}/etc/cmdb-exporter/web{{- end }}
{{- define "cmdb-exporter.tlsDir" -}}/etc/cmdb-exporter/tls{{- end }}
{{- define "cmdb-exporter.stateDir" -}}/var/lib/cmdb-exporter{{- end }}

{{/* "true" when the pods mount a CMDB Secret. */}}
{{- define "cmdb-exporter.hasSecret" -}}
{{- if or .Values.secrets.existingSecret .Values.secrets.create }}true{{ end }}
{{- end }}

{{- define "cmdb-exporter.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "cmdb-exporter.fullname" .) }}
{{- end }}

{{/* "true" when the web config is on, speaks TLS, asks for a password. */}}
{{- define "cmdb-exporter.web" -}}
{{- if or .Values.webConfig.config .Values.webConfig.existingSecret }}true{{ end }}
{{- end }}
{{- define "cmdb-exporter.webTls" -}}
{{- $w := .Values.webConfig }}
{{- if or $w.tlsSecret (hasKey $w.config "tls_server_config") (and $w.existingSecret $w.tls) }}true{{ end }}
{{- end }}
{{- define "cmdb-exporter.webBasicAuth" -}}
{{- $w := .Values.webConfig }}
{{- if or (get $w.config "basic_auth_users") (and $w.existingSecret $w.basicAuth) }}true{{ end }}
{{- end }}
{{- define "cmdb-exporter.scheme" -}}
{{- ternary "https" "http" (eq (include "cmdb-exporter.webTls" .) "true") }}
{{- end }}

{{/* The web-config.yml the chart writes (webConfig.config, pointed at tlsSecret when it names no certificate). */}}
{{- define "cmdb-exporter.webConfigFile" -}}
{{- $config := deepCopy .Values.webConfig.config }}
{{- if and .Values.webConfig.tlsSecret (not (hasKey $config "tls_server_config")) }}
{{- $dir := include "cmdb-exporter.tlsDir" . }}
{{- $_ := set $config "tls_server_config" (dict "cert_file" (printf "%s/tls.crt" $dir) "key_file" (printf "%s/tls.key" $dir)) }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
A secret text a stack wrote inline (secret, token): anything but one ${NAME} or ${NAME:-default}
reference, which the exporter expands from its environment (extraEnv) and which must stay as it is.
*/}}
{{- define "cmdb-exporter.isInline" -}}
{{- if and . (not (regexMatch "^\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\\}$" (toString .))) }}true{{ end }}
{{- end }}

{{/* The Secret key an inline secret of a stack moves to: <stack>-secret, <stack>-token. */}}
{{- define "cmdb-exporter.inlineKey" -}}
{{- printf "%s-%s" (index . 0 | replace ":" "_") (index . 1) }}
{{- end }}

{{/*
The exporter's configuration file: listenAddress on the container port, then config. With
secrets.create, a stack's inline secret/token moves into the Secret and the stack reads it from
its file instead.
*/}}
{{- define "cmdb-exporter.exporterConfig" -}}
{{- $config := deepCopy .Values.config }}
{{- $_ := set $config "listenAddress" (printf ":%s" (include "cmdb-exporter.port" .)) }}
{{- if .Values.secrets.create }}
{{- range $stack := ($config.stacks | default list) }}
{{- range $key := list "secret" "token" }}
{{- if eq (include "cmdb-exporter.isInline" (get $stack $key)) "true" }}
{{- $_ := unset $stack $key }}
{{- $_ := set $stack (printf "%sFile" $key) (printf "%s/%s" (include "cmdb-exporter.secretsDir" $) (include "cmdb-exporter.inlineKey" (list $stack.name $key))) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/* The Secret the chart creates: secrets.data and the stacks' inline secrets. */}}
{{- define "cmdb-exporter.secretData" -}}
{{- $data := deepCopy .Values.secrets.data }}
{{- range $stack := (.Values.config.stacks | default list) }}
{{- range $key := list "secret" "token" }}
{{- $value := get $stack $key }}
{{- if eq (include "cmdb-exporter.isInline" $value) "true" }}
{{- $name := include "cmdb-exporter.inlineKey" (list $stack.name $key) }}
{{- if hasKey $data $name }}
{{- fail (printf "config.stacks: the %s of stack %s would be Secret key %s, which secrets.data already has: rename one" $key $stack.name $name) }}
{{- end }}
{{- $_ := set $data $name (toString $value) }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $data }}
{{- end }}

{{/* The URL Prometheus reaches a pod at, for /sd (--web.external-url). */}}
{{- define "cmdb-exporter.externalUrl" -}}
{{- $ns := .Release.Namespace }}
{{- if .Values.sharding.enabled }}
{{- printf "%s://$(POD_NAME).%s-headless.%s.svc:%s" (include "cmdb-exporter.scheme" .) (include "cmdb-exporter.fullname" .) $ns (include "cmdb-exporter.port" .) }}
{{- else }}
{{- printf "%s://%s.%s.svc:%v" (include "cmdb-exporter.scheme" .) (include "cmdb-exporter.fullname" .) $ns .Values.service.port }}
{{- end }}
{{- end }}

{{/*
A generated file of the chart (files/) with its placeholders replaced: the job label, the
namespace, the Slack Secret and the Grafana URL. (list $ "files/…")
*/}}
{{- define "cmdb-exporter.file" -}}
{{- $ := index . 0 }}
{{- $.Files.Get (index . 1)
  | replace "CMDB_CHART_JOB" $.Values.scrape.job
  | replace "CMDB_CHART_NAMESPACE" $.Release.Namespace
  | replace "cmdb-chart-slack-secret" $.Values.alertmanagerConfig.slackSecret
  | replace "https://cmdb-chart-grafana.invalid" (trimSuffix "/" $.Values.alertmanagerConfig.grafanaUrl) }}
{{- end }}

{{/* The scrape settings shared by the ServiceMonitor's and PodMonitor's endpoints. */}}
{{- define "cmdb-exporter.endpointSettings" -}}
interval: {{ .Values.scrape.interval }}
scrapeTimeout: {{ .Values.scrape.scrapeTimeout }}
scheme: {{ include "cmdb-exporter.scheme" . }}
{{- with .Values.scrape.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.scrape.basicAuth }}
basicAuth:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.scrape.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The relabelings every target gets: the job the rules select, then the user's. */}}
{{- define "cmdb-exporter.relabelings" -}}
- targetLabel: job
  replacement: {{ .Values.scrape.job }}
{{- with .Values.scrape.relabelings }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* /sd answers behind the same TLS and password as the scrape. */}}
{{- define "cmdb-exporter.sdAuth" -}}
{{- with .Values.scrape.tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.scrape.basicAuth }}
basicAuth:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
