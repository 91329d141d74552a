// Package pod computes the JSON Patch the admission controller applies to a
// new pod: the controlling VPA's recommendation, capped by
// pkg/recommendation, written into the containers' requests and
// (proportional) limits, plus the vpaUpdates, vpaObservedContainers and
// openvpa.io/original-resources annotations (pkg/annotations).
//
// The handler never denies a pod. Pods with no controlling VPA get no patch;
// init containers and containers without a recommendation are never touched.
// Every patch is valid against the pod it was computed for: missing maps are
// created before keys are added to them, existing annotations are kept, and
// keys are escaped per RFC 6901.
package pod
