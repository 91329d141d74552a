# Copyright The OpenVPA Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# OpenVPA build, test and verification entry points.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
GO ?= go
export GOFLAGS ?= -buildvcs=false

COMPONENTS := recommender updater admission-controller
BINARIES := $(foreach c,$(COMPONENTS),$(if $(wildcard $(c)/main.go),bin/vpa-$(c)))
# The kubectl plugin (kubectl vpa explain, kubectl vpa report): copy it onto PATH.
PLUGINS := bin/kubectl-vpa

.PHONY: all
all: build

##@ Build

.PHONY: build
build: $(BINARIES) $(PLUGINS) ## Build the component binaries and the kubectl plugin into bin/.

# What --version and kubectl vpa version print (pkg/version), stamped at link time. VERSION
# defaults to git describe, COMMIT to the checked-out commit; BUILD_DATE, for reproducible
# builds, to SOURCE_DATE_EPOCH, which defaults to the commit's date. Without git: v0.0.0-dev,
# and no commit or date unless given.
VERSION ?= $(or $(shell git describe --tags --always --dirty 2>/dev/null),v0.0.0-dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
BUILD_DATE ?= $(if $(SOURCE_DATE_EPOCH),$(shell date -u -d "@$(SOURCE_DATE_EPOCH)" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$(SOURCE_DATE_EPOCH)" +%Y-%m-%dT%H:%M:%SZ))
VERSION_PKG := github.com/openvpa/openvpa/pkg/version
VERSION_LDFLAGS = -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)

bin/vpa-%: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(VERSION_LDFLAGS)' -o $@ ./$*

bin/kubectl-vpa: FORCE
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(VERSION_LDFLAGS)' -o $@ ./kubectl-vpa

.PHONY: version
version: ## Print the VERSION, COMMIT and BUILD_DATE that builds stamp into the binaries.
	@echo "VERSION=$(VERSION)"
	@echo "COMMIT=$(COMMIT)"
	@echo "BUILD_DATE=$(BUILD_DATE)"

.PHONY: FORCE
FORCE:

##@ Images (the real node)

IMAGES_DIR := _output/images
IMAGE_TOOLS := hack/tools/images
# The test and sandbox programs, static for linux/amd64 like bin/.
IMAGE_PROGRAMS := $(IMAGES_DIR)/bin/pause $(IMAGES_DIR)/bin/memhog

# The local cluster's real node (hack/cluster/node.sh): its containerd, and the ctr built with it.
NODE_CONTAINERD := $(or $(CLUSTER_DIR),$(CURDIR)/_output/cluster)/node/containerd.sock

.PHONY: images
images: build $(IMAGE_PROGRAMS) ## Write the component, pause and memhog images as OCI tarballs into _output/images, and import them into the local cluster's real node if it runs.
	$(GO) run -C $(IMAGE_TOOLS) . --bin-dir=$(CURDIR)/bin --pause=$(CURDIR)/$(IMAGES_DIR)/bin/pause \
		--memhog=$(CURDIR)/$(IMAGES_DIR)/bin/memhog --out=$(CURDIR)/$(IMAGES_DIR)
	@if [ -S "$(NODE_CONTAINERD)" ]; then \
		hack/images/import.sh "$$(hack/cluster/build.sh --print)/ctr" "$(NODE_CONTAINERD)"; \
	else \
		echo "the real node is not running (make cluster-up); cluster-up imports the images when it starts"; \
	fi

$(IMAGES_DIR)/bin/%: FORCE
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -C $(IMAGE_TOOLS) -trimpath -ldflags='-s -w' -o $(CURDIR)/$@ ./$*

# CTR and CONTAINERD_ADDRESS name containerd's ctr and socket; see hack/images/import.sh.
.PHONY: images-import
images-import: images ## Import _output/images into containerd's k8s.io namespace (CTR=path CONTAINERD_ADDRESS=socket).
	hack/images/import.sh

##@ Release

# make release VERSION=v1.2.3 REGISTRY=ghcr.io/openvpa: see docs/release.md. PUSH=0 only writes
# the files; PLAIN_HTTP=1 talks http to the registry (one on loopback); ALLOW_DIRTY=1 releases a
# tree with uncommitted changes; RELEASE_DOWNLOAD_URL is where the plugin archives will be
# downloaded from (the krew manifest's URIs).
RELEASE_DIR = $(CURDIR)/_output/release/$(VERSION)
PUSH ?= 1
PLAIN_HTTP ?= 0
ALLOW_DIRTY ?= 0
RELEASE_DOWNLOAD_URL ?= https://github.com/openvpa/openvpa/releases/download/$(VERSION)
RELEASE_FLAGS = --repo=$(CURDIR) --version=$(VERSION) --registry=$(REGISTRY) --out=$(RELEASE_DIR) \
	--source-date-epoch=$(SOURCE_DATE_EPOCH) --push=$(if $(filter 1 true yes,$(PUSH)),true,false) \
	--plain-http=$(if $(filter 1 true yes,$(PLAIN_HTTP)),true,false)

.PHONY: release
release: ## Build a release (VERSION=vX.Y.Z REGISTRY=host[:port]/path): multi-arch images, chart, plugin archives, krew manifest, openvpa.yaml into _output/release/VERSION; push images and chart.
	@if [ "$(origin VERSION)" = file ]; then echo "make release: VERSION is required, e.g. make release VERSION=v1.2.3 REGISTRY=ghcr.io/openvpa" >&2; exit 1; fi
	@if [ -z "$(REGISTRY)" ]; then echo "make release: REGISTRY is required, e.g. REGISTRY=ghcr.io/openvpa" >&2; exit 1; fi
	$(GO) run -C $(IMAGE_TOOLS) ./cmd/release $(RELEASE_FLAGS) --commit=$(COMMIT) \
		--download-url=$(RELEASE_DOWNLOAD_URL) --allow-dirty=$(if $(filter 1 true yes,$(ALLOW_DIRTY)),true,false)
	GOWORK=off $(GO) run -C hack/tools/helm ./cmd/releasechart $(RELEASE_FLAGS)
	$(GO) run -C $(IMAGE_TOOLS) ./cmd/release --finalize --version=$(VERSION) --out=$(RELEASE_DIR)
	@echo "release $(VERSION) in $(RELEASE_DIR)"

##@ Test

.PHONY: test
test: ## Run every test: unit, integration and e2e (starts the local control plane).
	hack/test.sh

.PHONY: test-unit
test-unit: ## Run the unit tests only (no control plane).
	$(GO) test $$($(GO) list ./... | grep -v '/e2e/')
	$(GO) -C $(IMAGE_TOOLS) test ./...
	GOWORK=off $(GO) -C hack/tools/helm test ./...
	GOWORK=off $(GO) -C hack/tools/upstream-vpa test ./...

# Not part of test: needs a cluster with room for the pods (CLUSTER_NODES=10 for 1,000) and
# takes several minutes. KUBECONFIG selects another cluster; flags in SCALE_TEST_FLAGS, e.g.
# SCALE_TEST_FLAGS="--deployments=2000 --replicas=1".
.PHONY: scale-test
scale-test: bin/vpa-recommender ## Measure the recommender with 500 Deployments and VPAs on a running control plane.
	$(KUBECTL) apply --server-side -f deploy/crds
	$(GO) run ./hack/scale-test --recommender=bin/vpa-recommender $(SCALE_TEST_FLAGS)

##@ Local control plane

KUBECTL ?= hack/cluster/kubectl.sh

.PHONY: cluster-up
cluster-up: ## Start (or reuse) the local control plane; kubeconfig in _output/cluster/kubeconfig.
	hack/cluster/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the local control plane (state kept; hack/cluster/down.sh --wipe deletes it).
	hack/cluster/down.sh

##@ Demo

.PHONY: demo
demo: ## Build, start the local control plane and the three components, run a demo workload, show kubectl describe vpa.
	hack/demo/up.sh

.PHONY: demo-down
demo-down: ## Stop everything make demo started.
	hack/demo/down.sh

##@ Deployment

.PHONY: manifests
manifests: ## Render deploy/ (kustomize) into _output/openvpa.yaml.
	@mkdir -p _output
	$(KUBECTL) kustomize deploy >_output/openvpa.yaml
	@echo "wrote _output/openvpa.yaml"

##@ Code generation and verification

.PHONY: update
update: ## Regenerate clients, CRDs and docs; add missing licence headers.
	hack/update-boilerplate.sh
	hack/update-codegen.sh
	hack/update-crds.sh
	hack/update-chart.sh
	hack/update-flags-docs.sh
	hack/update-upstream-flags.sh
	hack/update-monitoring.sh

.PHONY: verify
verify: ## Licence headers, gofmt, go vet (also of hack/tools/upstream-vpa), tidy go.mod files, golangci-lint (main, images and helm modules), generated code, CRDs, flag docs, upstream's flag list, the Helm chart, the monitoring kit (promtool) and docs/reference.md against the code.
	hack/verify-boilerplate.sh
	hack/verify-gofmt.sh
	$(GO) vet ./...
	$(GO) -C $(IMAGE_TOOLS) vet ./...
	GOWORK=off $(GO) -C hack/tools/helm vet ./...
	GOWORK=off $(GO) -C hack/tools/upstream-vpa vet ./...
	hack/verify-gomod.sh
	hack/verify-lint.sh
	hack/verify-lint.sh $(IMAGE_TOOLS)
	hack/verify-lint.sh hack/tools/helm
	hack/verify-codegen.sh
	hack/verify-crds.sh
	hack/verify-flags-docs.sh
	hack/verify-upstream-flags.sh
	hack/verify-chart.sh
	hack/verify-monitoring.sh
	hack/verify-reference.sh

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
