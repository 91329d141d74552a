package pod

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Operation is one RFC 6902 JSON Patch operation. The handler only adds:
// "add" on an existing member replaces it, which is what is wanted.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Patch is an RFC 6902 JSON Patch.
type Patch []Operation

// Marshal returns the patch as JSON.
func (p Patch) Marshal() ([]byte, error) {
	return json.Marshal(p)
}

// escape escapes one JSON Pointer reference token (RFC 6901).
func escape(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

func add(path string, value any) Operation {
	return Operation{Op: "add", Path: path, Value: value}
}

func containerPath(i int) string {
	return "/spec/containers/" + strconv.Itoa(i) + "/resources"
}

func annotationPath(key string) string {
	return "/metadata/annotations/" + escape(key)
}
