{{/*
The name of the release's objects: the release's own when it names the chart already
(`helm install cronscaler`), so that a default install names everything as `kubectl apply -k .`
does (tests/helm/kustomize.rs compares the two), else "<release>-cronscaler".
*/}}
{{- define "cronscaler.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cronscaler.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The wake-up backend's Pods: a Deployment of their own, which the controller's selectors miss. */}}
{{- define "cronscaler.wakeSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-wake
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The web console's Pods: a Deployment of their own, as the wake-up backend's are. */}}
{{- define "cronscaler.consoleSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-console
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cronscaler.labels" -}}
{{ include "cronscaler.selectorLabels" . }}
{{ include "cronscaler.releaseLabels" . }}
{{- end -}}

{{- define "cronscaler.wakeLabels" -}}
{{ include "cronscaler.wakeSelectorLabels" . }}
{{ include "cronscaler.releaseLabels" . }}
{{- end -}}

{{- define "cronscaler.consoleLabels" -}}
{{ include "cronscaler.consoleSelectorLabels" . }}
{{ include "cronscaler.releaseLabels" . }}
{{- end -}}

{{- define "cronscaler.releaseLabels" -}}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
The rules of one Role or ClusterRole of a file the kustomize install applies (rbac/ and
manifests/namespaced/, copied under files/): the chart grants what `kubectl apply -k .` grants,
from the same lines. Takes (list $ "path under files/" "Kind" "name").
*/}}
{{- define "cronscaler.rules" -}}
{{- $root := index . 0 -}}
{{- $file := index . 1 -}}
{{- $kind := index . 2 -}}
{{- $name := index . 3 -}}
{{- $found := dict -}}
{{- range $document := regexSplit "(?m)^---\\s*$" ($root.Files.Get $file) -1 -}}
{{- $object := fromYaml $document -}}
{{- if and (eq (toString $object.kind) $kind) (eq (toString $object.metadata.name) $name) -}}
{{- $_ := set $found "rules" $object.rules -}}
{{- end -}}
{{- end -}}
{{- if not $found.rules -}}
{{- fail (printf "files/%s holds no %s %s" $file $kind $name) -}}
{{- end -}}
{{- toYaml $found.rules -}}
{{- end -}}

{{/*
The controllers the release runs, as JSON: one cluster-wide, or one per namespace of
scope.namespaces (the controller watches one namespace, or all).
*/}}
{{- define "cronscaler.instances" -}}
{{- $fullname := include "cronscaler.fullname" . -}}
{{- $instances := list -}}
{{- if .Values.scope.namespaces -}}
{{- range $namespace := .Values.scope.namespaces -}}
{{- $instances = append $instances (dict "name" (printf "%s-%s" $fullname $namespace | trunc 63 | trimSuffix "-") "watches" $namespace) -}}
{{- end -}}
{{- else -}}
{{- $instances = append $instances (dict "name" $fullname "watches" "") -}}
{{- end -}}
{{- toJson $instances -}}
{{- end -}}

{{/* The wake-up backend runs cluster-wide only: a namespaced controller cannot read Namespaces. */}}
{{- define "cronscaler.wake" -}}
{{- if and .Values.wake.enabled (not .Values.scope.namespaces) -}}true{{- end -}}
{{- end -}}

{{/* The web console runs where console.enabled says so (off by default). A release upgraded with
`--reuse-values` from a chart before the console has no console values at all: no console. */}}
{{- define "cronscaler.console" -}}
{{- if (.Values.console | default dict).enabled -}}true{{- end -}}
{{- end -}}

{{/* `--prices`' table from `prices`, empty where no price is given; a price without a currency
fails the render, rather than the console at its start. */}}
{{- define "cronscaler.prices" -}}
{{- with .Values.prices }}
{{- $entries := list }}
{{- range $name := list "cpu" "memory" "gpu" }}
{{- with index $.Values.prices $name }}{{ $entries = append $entries (printf "%s=%v" $name .) }}{{ end }}
{{- end }}
{{- range $name, $price := (.extended | default dict) }}
{{- $entries = append $entries (printf "%s=%v" $name $price) }}
{{- end }}
{{- if and $entries (not .currency) }}
{{- fail "prices.currency: every price needs the currency it is in, e.g. USD" }}
{{- end }}
{{- if $entries }}{{ join "," (append $entries (printf "currency=%s" .currency)) }}{{ end }}
{{- end }}
{{- end }}
