{{/* Labels on every object the chart creates (not on pod templates, whose labels are deploy/'s). */}}
{{- define "vpa.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The image of a component: "vpa.image" (list $ .Values.recommender.image). */}}
{{- define "vpa.image" -}}
{{- $root := index . 0 -}}
{{- $image := index . 1 -}}
{{ $image.repository }}:{{ $image.tag | default $root.Chart.AppVersion }}
{{- end }}

{{/* Arguments shared by the three components, after each one's own: verbosity, feature gates,
namespace filter. */}}
{{- define "vpa.commonArgs" -}}
- --v={{ .Values.logVerbosity }}
{{- with .Values.featureGates }}
- --feature-gates={{ . }}
{{- end }}
{{- with .Values.vpaObjectNamespace }}
- --vpa-object-namespace={{ . }}
{{- end }}
{{- with .Values.ignoredVpaObjectNamespaces }}
- --ignored-vpa-object-namespaces={{ . }}
{{- end }}
{{- end }}

{{/* A component's flags map and extra arguments: "vpa.flags" .Values.recommender. */}}
{{- define "vpa.flags" -}}
{{- range $name, $value := .flags }}
- --{{ $name }}={{ $value }}
{{- end }}
{{- range .extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* Scheduling and pod settings of a component: "vpa.podSettings" (list $ .Values.recommender). */}}
{{- define "vpa.podSettings" -}}
{{- $root := index . 0 -}}
{{- $c := index . 1 -}}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $c.nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.tolerations }}
tolerations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.affinity }}
affinity:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
