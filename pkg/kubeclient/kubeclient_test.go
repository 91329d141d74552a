package kubeclient

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestProtobuf(t *testing.T) {
	cfg := &rest.Config{Host: "https://example", QPS: 5}
	pb := Protobuf(cfg)
	if pb.ContentType != "application/vnd.kubernetes.protobuf" || pb.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("content types %q / %q", pb.ContentType, pb.AcceptContentTypes)
	}
	if pb.Host != cfg.Host || pb.QPS != cfg.QPS {
		t.Errorf("copy lost settings: %+v", pb)
	}
	if cfg.ContentType != "" || cfg.AcceptContentTypes != "" {
		t.Errorf("original modified: %+v", cfg)
	}
}
