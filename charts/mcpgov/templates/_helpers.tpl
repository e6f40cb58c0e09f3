{{/* The chart name, overridable. */}}
{{- define "mcpgov.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: the release name, prefixed to the chart name unless it already
contains it. Truncated to 63 characters (DNS label).
*/}}
{{- define "mcpgov.fullname" -}}
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

{{/* name-version for the helm.sh/chart label. */}}
{{- define "mcpgov.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "mcpgov.labels" -}}
helm.sh/chart: {{ include "mcpgov.chart" . }}
{{ include "mcpgov.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mcpgov
{{- end }}

{{/* Labels that select the operator pods (immutable in a Deployment: keep them stable). */}}
{{- define "mcpgov.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcpgov.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "mcpgov.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcpgov.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, the tag defaulting to the appVersion. */}}
{{- define "mcpgov.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}
{{- end }}

{{/* The admission webhook's Service, Role and ClusterRole (namespaced names). */}}
{{- define "mcpgov.admissionName" -}}
{{- printf "%s-admission" (include "mcpgov.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The ValidatingWebhookConfiguration: cluster-scoped, so the namespace is in it. */}}
{{- define "mcpgov.admissionConfigName" -}}
{{- printf "%s-%s" (include "mcpgov.fullname" .) .Release.Namespace | trunc 253 | trimSuffix "-" }}
{{- end }}

{{/* The Secret of the self-managed CA and serving certificate. */}}
{{- define "mcpgov.admissionSecretName" -}}
{{- printf "%s-admission-tls" (include "mcpgov.fullname" .) | trunc 253 | trimSuffix "-" }}
{{- end }}

{{/* Checks of value combinations the schema cannot express. */}}
{{- define "mcpgov.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true (one writer, warm standbys)" }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.service.enabled) }}
{{- fail "serviceMonitor.enabled needs metrics.service.enabled=true" }}
{{- end }}
{{- end }}

{{/*
The reports API --policy-reports writes ("policyreport" or "openreports"), or "" when
off (policyReports "off" or false).
*/}}
{{- define "mcpgov.policyReports" -}}
{{- $v := .Values.policyReports | default "off" | toString -}}
{{- if has $v (list "policyreport" "openreports") -}}{{ $v }}{{- end -}}
{{- end }}

{{/* The MCP listener's Service and its review ClusterRole. */}}
{{- define "mcpgov.mcpName" -}}
{{- printf "%s-mcp" (include "mcpgov.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
