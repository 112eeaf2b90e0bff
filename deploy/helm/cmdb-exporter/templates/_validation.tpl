{{/*
What values.schema.json cannot say: rules across keys. Each failure names the keys and what to do.
Included by the workload template, so every render runs it.
*/}}
{{- define "cmdb-exporter.validate" -}}
{{- $v := .Values }}
{{- $stacks := $v.config.stacks | default list }}
{{- $s := $v.secrets }}

{{- /* What only the user knows, which the defaults leave empty rather than deploy an example: the
image, the CMDBs, the Secret with their credentials. One message names every one that is missing. */}}
{{- $missing := list }}
{{- if not $v.image.repository }}
{{- $missing = append $missing "image.repository: the image you built from the repository's Dockerfile and pushed (none is published), e.g. registry.example.com/cmdb-exporter" }}
{{- end }}
{{- $noStacks := and (not $stacks) (not $v.config.stacksDir) }}
{{- if $noStacks }}
{{- $missing = append $missing "config.stacks: your CMDBs, each with its name, config.stacks[].baseUrl (the address before /CMDB: https://<your CMDB>) and credentials (clientId with secretFile: /etc/cmdb-exporter/secrets/<key>, or tokenFile); or config.stacksDir with extraVolumes" }}
{{- end }}
{{- if not (or $s.existingSecret $s.create) }}
{{- $unmounted := "" }}
{{- range $i, $stack := $stacks }}
{{- range $key := list "secretFile" "tokenFile" }}
{{- $file := get $stack $key }}
{{- if and (not $unmounted) $file (hasPrefix "/etc/cmdb-exporter/secrets/" $file) }}
{{- $unmounted = printf "config.stacks[%d].%s reads %s from the Secret's mount, but no Secret is mounted: set secrets.existingSecret to the Secret you created with the CMDB credentials (kubectl create secret generic …), or secrets.create with secrets.data" $i $key $file }}
{{- end }}
{{- end }}
{{- end }}
{{- if $noStacks }}
{{- $unmounted = "secrets.existingSecret: the Secret you created with the CMDB credentials, one key per secretFile/tokenFile of the stacks (kubectl create secret generic …); or secrets.create with secrets.data" }}
{{- end }}
{{- if $unmounted }}{{ $missing = append $missing $unmounted }}{{ end }}
{{- end }}
{{- if $missing }}
{{- fail (printf "the chart has no default for these; set them (docs/kubernetes.md, With Helm):\n- %s" (join "\n- " $missing)) }}
{{- end }}

{{- /* Replicas and shards: the shard count is the replica count, wired by the chart. */}}
{{- if and (not $v.sharding.enabled) (gt (int $v.replicas) 1) }}
{{- if $v.persistence.enabled }}
{{- fail (printf "persistence.enabled with replicas: %d of a Deployment: its one ReadWriteOnce claim cannot be shared by %d pods. Set sharding.enabled: true for a StatefulSet with a claim per pod, or replicas: 1" (int $v.replicas) (int $v.replicas)) }}
{{- end }}
{{- fail (printf "replicas: %d without sharding.enabled: every replica would poll every stack, doubling the requests against the CMDB's 60 a minute. Set sharding.enabled: true to split the stacks over the replicas, or replicas: 1" (int $v.replicas)) }}
{{- end }}
{{- range $arg := $v.extraArgs }}
{{- $flag := regexReplaceAll "=.*$" $arg "" }}
{{- if has $flag (list "--shard" "--total-shards" "--shard-from-pod-name") }}
{{- fail (printf "extraArgs: %s: the chart sets the shards from replicas and sharding.enabled (the shard count must equal the number of pods); remove it" $flag) }}
{{- end }}
{{- if has $flag (list "--config" "--config.file" "--storage.path" "--web.listen-address" "--web.config.file" "--web.external-url") }}
{{- fail (printf "extraArgs: %s is set by the chart (config, persistence, webConfig, scrape.perStack); remove it" $flag) }}
{{- end }}
{{- end }}
{{- range $env := $v.extraEnv }}
{{- if has $env.name (list "EXPORTER_SHARD" "EXPORTER_TOTAL_SHARDS" "EXPORTER_SHARD_FROM_POD_NAME" "POD_NAME") }}
{{- fail (printf "extraEnv: %s: the chart sets the shards from replicas and sharding.enabled (the shard count must equal the number of pods); remove it" $env.name) }}
{{- end }}
{{- end }}
{{- if and $v.sharding.enabled $v.persistence.existingClaim }}
{{- fail "persistence.existingClaim with sharding.enabled: each pod of the StatefulSet gets a claim of its own; remove existingClaim" }}
{{- end }}

{{- /* The exporter's shutdown: in-flight polls get 5 s, then the state is written; it exits within 10 s of SIGTERM. */}}
{{- if lt (int $v.terminationGracePeriodSeconds) 10 }}
{{- fail (printf "terminationGracePeriodSeconds: %d is shorter than the exporter's shutdown deadline of 10 s (in-flight polls get 5 s to end, then the state is written): Kubernetes would kill it first. Set at least 10" (int $v.terminationGracePeriodSeconds)) }}
{{- end }}

{{- /* Secrets: an existing Secret or one the chart creates, never both; inline secrets only into a created one. */}}
{{- if and $s.existingSecret $s.create }}
{{- fail (printf "secrets.existingSecret (%s) and secrets.create: the Secret is either yours or the chart's, never both. Set existingSecret: \"\" to let the chart create it" $s.existingSecret) }}
{{- end }}
{{- if and $s.data (not $s.create) }}
{{- fail "secrets.data holds secrets in the values (helm get values shows them), but secrets.create is false: set secrets.create: true (and existingSecret: \"\") to let the chart create the Secret from them, or put them in a Secret of yours" }}
{{- end }}
{{- $secretKeys := list }}
{{- if $s.create }}{{ $secretKeys = keys (include "cmdb-exporter.secretData" . | fromYaml) }}{{ end }}
{{- if and $s.create (not $secretKeys) }}
{{- fail "secrets.create: nothing to put in the Secret: give secrets.data, or a stack's secret" }}
{{- end }}
{{- range $i, $stack := $stacks }}
{{- range $key := list "secret" "token" }}
{{- if and (eq (include "cmdb-exporter.isInline" (get $stack $key)) "true") (not $s.create) }}
{{- fail (printf "config.stacks[%d].%s: an inline secret in the values (helm get values shows it). Read it from the Secret with %sFile: /etc/cmdb-exporter/secrets/<key>, write ${VAR} with extraEnv, or set secrets.create: true to move it into a Secret the chart creates" $i $key $key) }}
{{- end }}
{{- end }}
{{- range $key := list "secretFile" "tokenFile" }}
{{- $file := get $stack $key }}
{{- if and $file (hasPrefix "/etc/cmdb-exporter/secrets/" $file) }}
{{- if and $s.create (not (has (base $file) $secretKeys)) }}
{{- fail (printf "config.stacks[%d].%s reads key %s, which the Secret the chart creates lacks (keys: %s): add it to secrets.data" $i $key (base $file) (join ", " $secretKeys)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- /* The web config. */}}
{{- $w := $v.webConfig }}
{{- if and $w.config $w.existingSecret }}
{{- fail "webConfig.config and webConfig.existingSecret: the web config is either in the values or in your Secret, never both" }}
{{- end }}
{{- range $user, $hash := (get $w.config "basic_auth_users" | default dict) }}
{{- if not (regexMatch "^\\$2[aby]?\\$[0-9]{2}\\$[./A-Za-z0-9]{53}$" (toString $hash)) }}
{{- fail (printf "webConfig.config.basic_auth_users.%s: not a bcrypt hash. Never a password here (helm get values shows it): htpasswd -nBC 10 %s" $user $user) }}
{{- end }}
{{- end }}
{{- if hasKey (get $w.config "tls_server_config" | default dict) "key" }}
{{- fail "webConfig.config.tls_server_config.key: a private key inline in the values (helm get values shows it). Put it in a kubernetes.io/tls Secret and name it in webConfig.tlsSecret" }}
{{- end }}
{{- if and (eq (include "cmdb-exporter.webBasicAuth" .) "true") (ne $v.scrape.via "none") (not $v.scrape.basicAuth) }}
{{- fail (printf "webConfig asks for a password, but scrape.basicAuth is empty: the %s would get 401. Give scrape.basicAuth the username and password Secret keys" $v.scrape.via) }}
{{- end }}

{{- /* How Prometheus scrapes. */}}
{{- $via := $v.scrape.via }}
{{- if and (eq $via "ScrapeConfig") (not $v.scrape.perStack) }}
{{- fail "scrape.via: ScrapeConfig reads the exporter's /sd, which lists one target per stack: set scrape.perStack: true (or via: ServiceMonitor for one target)" }}
{{- end }}
{{- if and (eq $via "PodMonitor") $v.scrape.perStack }}
{{- fail "scrape.perStack with via: PodMonitor: per-stack targets come from a ScrapeConfig of /sd (or a ServiceMonitor endpoint per stack); set scrape.via: ScrapeConfig" }}
{{- end }}
{{- if and (eq $via "ServiceMonitor") $v.scrape.perStack $v.sharding.enabled }}
{{- fail "scrape.perStack with via: ServiceMonitor and sharding.enabled: every pod would be asked for every stack, and each serves only its own. Set scrape.via: ScrapeConfig (one /sd per pod)" }}
{{- end }}
{{- if and (eq $via "ServiceMonitor") $v.scrape.perStack (not $stacks) }}
{{- fail "scrape.perStack with via: ServiceMonitor needs the stacks in config.stacks (one endpoint each); with config.stacksDir use scrape.via: ScrapeConfig" }}
{{- end }}

{{- /* The routing's receivers. */}}
{{- $am := $v.alertmanagerConfig }}
{{- if and $am.enabled $am.receivers }}
{{- $names := list }}
{{- range $am.receivers }}{{ $names = append $names .name }}{{ end }}
{{- range $need := list "cmdb-none" "cmdb-critical" "cmdb-warning" }}
{{- if not (has $need $names) }}
{{- fail (printf "alertmanagerConfig.receivers lacks %s, which the shipped routes send to (receivers: %s)" $need (join ", " $names)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
