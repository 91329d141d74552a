{{/* The app.kubernetes.io/name label: nameOverride or the chart's name. */}}
{{- define "vpa.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object the chart creates (pod templates get commonLabels only, beside
their own: their selector labels are deploy/'s). */}}
{{- define "vpa.labels" -}}
app.kubernetes.io/name: {{ include "vpa.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The image of a component: "vpa.image" (list $ .Values.recommender.image). */}}
{{- define "vpa.image" -}}
{{- $root := index . 0 -}}
{{- $image := index . 1 -}}
{{ $image.repository }}:{{ $image.tag | default $root.Chart.AppVersion }}
{{- end }}

{{/* The ServiceAccount name of a component: "vpa.serviceAccountName" (list $c "vpa-recommender"). */}}
{{- define "vpa.serviceAccountName" -}}
{{- $c := index . 0 -}}
{{- (($c.serviceAccount | default dict).name) | default (index . 1) }}
{{- end }}

{{/* The webhook's Service port. */}}
{{- define "vpa.servicePort" -}}
{{- $s := .Values.admissionController.service -}}
{{- if $s.ports }}{{ (first $s.ports).port }}{{ else }}{{ $s.port }}{{ end }}
{{- end }}

{{/* How the webhook gets its certificate: existing-secret, cert-manager, self-signed (the
admission controller generates one) or chart (genCA). */}}
{{- define "vpa.certSource" -}}
{{- $a := .Values.admissionController -}}
{{- if $a.tls.existingSecret -}}
existing-secret
{{- else if $a.certManager.enabled -}}
cert-manager
{{- else if $a.registerWebhook -}}
self-signed
{{- else if $a.certGen.enabled -}}
chart
{{- else -}}
{{- fail "admissionController: no certificate source; set tls.existingSecret, certManager.enabled, certGen.enabled or registerWebhook" -}}
{{- end -}}
{{- end }}

{{/* The Secret the admission controller mounts. */}}
{{- define "vpa.tlsSecretName" -}}
{{- .Values.admissionController.tls.existingSecret | default .Values.admissionController.tls.secretName }}
{{- end }}

{{/* Arguments shared by the three components: verbosity, feature gates, namespace filter.
"vpa.commonArgs" (list $ $c). */}}
{{- define "vpa.commonArgs" -}}
{{- $root := index . 0 -}}
{{- $c := index . 1 -}}
- --v={{ if kindIs "invalid" $c.logLevel }}{{ $root.Values.logVerbosity }}{{ else }}{{ $c.logLevel }}{{ end }}
{{- with $root.Values.featureGates }}
- --feature-gates={{ . }}
{{- end }}
{{- with $root.Values.vpaObjectNamespace }}
- --vpa-object-namespace={{ . }}
{{- end }}
{{- with $root.Values.ignoredVpaObjectNamespaces }}
- --ignored-vpa-object-namespaces={{ . }}
{{- end }}
{{- end }}

{{/* Leader election flags of the recommender and the updater: "vpa.leaderElectionArgs" (list $ $c).
The Lease goes into the release's namespace unless resourceNamespace says otherwise. */}}
{{- define "vpa.leaderElectionArgs" -}}
{{- $root := index . 0 -}}
{{- $c := index . 1 -}}
{{- $le := $c.leaderElection | default dict -}}
{{- $enabled := gt (int $c.replicas) 1 -}}
{{- if not (kindIs "invalid" $le.enabled) }}{{ $enabled = $le.enabled }}{{ end -}}
- --leader-elect={{ $enabled }}
- --leader-elect-resource-namespace={{ $le.resourceNamespace | default $root.Release.Namespace }}
{{- with $le.resourceName }}
- --leader-elect-resource-name={{ . }}
{{- end }}
{{- with $le.leaseDuration }}
- --leader-elect-lease-duration={{ . }}
{{- end }}
{{- with $le.renewDeadline }}
- --leader-elect-renew-deadline={{ . }}
{{- end }}
{{- with $le.retryPeriod }}
- --leader-elect-retry-period={{ . }}
{{- end }}
{{- end }}

{{/* A component's flags map and extra arguments (a list, or a map as flags): "vpa.flags" $c. */}}
{{- define "vpa.flags" -}}
{{- range $name, $value := .flags }}
- --{{ $name }}={{ $value }}
{{- end }}
{{- if kindIs "map" .extraArgs }}
{{- range $name, $value := .extraArgs }}
- --{{ trimPrefix "--" $name }}={{ $value }}
{{- end }}
{{- else }}
{{- range .extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* A component's Deployment: "vpa.deployment" (dict "root" $ "c" $c "name" "vpa-recommender"
"container" "recommender" "port" 8942 "args" $args "env" $env "volumes" $v "mounts" $m "readyPeriod" 10). */}}
{{- define "vpa.deployment" -}}
{{- $root := .root -}}
{{- $c := .c -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    app: {{ .name }}
    {{- include "vpa.labels" $root | nindent 4 }}
  {{- with $c.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  replicas: {{ $c.replicas }}
  {{- if not (kindIs "invalid" $c.revisionHistoryLimit) }}
  revisionHistoryLimit: {{ $c.revisionHistoryLimit }}
  {{- end }}
  {{- if $c.updateStrategy }}
  strategy:
    {{- toYaml $c.updateStrategy | nindent 4 }}
  {{- else }}
  # A new replica comes up (and is ready, leading or not) before an old one goes.
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  {{- end }}
  selector:
    matchLabels:
      app: {{ .name }}
  template:
    metadata:
      labels:
        {{- with $root.Values.commonLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $c.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        app: {{ .name }}
      {{- with $c.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "vpa.serviceAccountName" (list $c .name) }}
      {{- if not $c.serviceAccount.automountServiceAccountToken }}
      automountServiceAccountToken: false
      {{- end }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- if $c.hostNetwork }}
      hostNetwork: true
      dnsPolicy: ClusterFirstWithHostNet
      {{- end }}
      {{- with $c.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with $c.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.tolerations }}
      tolerations:
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with $c.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.topologySpreadConstraints }}
      topologySpreadConstraints:
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with $root.Values.podSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
      - name: {{ .container }}
        image: {{ include "vpa.image" (list $root $c.image) }}
        imagePullPolicy: {{ $c.image.pullPolicy }}
        args:
        {{- regexReplaceAll "\n\\s*\n" (.args | trim) "\n" | nindent 8 }}
        {{- $env := concat (.env | default list) ($c.extraEnv | default list) }}
        {{- with $env }}
        env:
        {{- toYaml . | nindent 8 }}
        {{- end }}
        ports:
        {{- if .webhook }}
        - name: webhook
          containerPort: 8000
        {{- end }}
        - name: prometheus
          containerPort: {{ .port }}
        livenessProbe:
          httpGet:
            path: /healthz
            port: prometheus
          initialDelaySeconds: 10
          periodSeconds: 30
          failureThreshold: 3
        readinessProbe:
          httpGet:
            path: /readyz
            port: prometheus
          periodSeconds: {{ .readyPeriod }}
        {{- $mounts := concat (.mounts | default list) ($c.extraVolumeMounts | default list) }}
        {{- with $mounts }}
        volumeMounts:
        {{- toYaml . | nindent 8 }}
        {{- end }}
        resources:
          {{- toYaml ($c.resources | default (dict "requests" (dict "cpu" "50m" "memory" "100Mi") "limits" (dict "cpu" "500m" "memory" "500Mi"))) | nindent 10 }}
        {{- with $root.Values.containerSecurityContext }}
        securityContext:
          {{- toYaml . | nindent 10 }}
        {{- end }}
      {{- $volumes := concat (.volumes | default list) ($c.extraVolumes | default list) }}
      {{- with $volumes }}
      volumes:
      {{- toYaml . | nindent 6 }}
      {{- end }}
{{- end }}
