# aacmcp — the two commands a new user needs are `make run` and `make test`.
# Everything the tests need is installed by `make test` itself (Go modules, and the npm
# packages pinned by test/package-lock.json).

SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO          ?= go
ADDR        ?= 127.0.0.1:8080
DATA        ?= .aacmcp
CLI         ?= dist/aacmcp
ARCH        ?= arm64
# The Go Lambda functions: every functions/<name>/main.go. functions/edge is the
# Lambda@Edge function, plain Node.js that infra deploys from its folder as it is.
FUNCTIONS   := $(patsubst functions/%/main.go,%,$(wildcard functions/*/main.go))
NPM_STAMP   := test/node_modules/.installed
# Short fuzzing in `make test`; `make fuzz` runs each target for FUZZTIME.
FUZZTIME    ?= 60s
TEST_FUZZTIME ?= 3s
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
# Built, then run as itself: `go run` exits 1 whenever it gets the SIGINT of a Ctrl-C,
# even after the server it ran has shut down cleanly and exited 0, and make would then
# end a clean stop with "Error 1" (test/makerun).
run: ## Serve MCP locally with the embedded store and dev tokens (ADDR=host:port)
	$(GO) build -o $(CLI) ./cmd/aacmcp
	$(CLI) serve --dev --addr $(ADDR) --data $(DATA)

.PHONY: deps
# The OAuth tests drive Debian's chromium with playwright-core, which never downloads a
# browser of its own: install the distribution's package when it is missing, and stop
# here, loudly, when that is not possible.
deps: $(NPM_STAMP) ## Install Go modules, Debian's chromium and the pinned npm test packages
	$(GO) mod download
	@if [ ! -x /usr/bin/chromium ]; then \
	  echo "deps: /usr/bin/chromium is missing: apt-get install chromium"; \
	  sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
	  if ! { $$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y chromium; }; then \
	    echo "deps: could not install Debian's chromium; the OAuth browser tests need /usr/bin/chromium (apt-get install chromium, as root)" >&2; \
	    exit 1; \
	  fi; \
	  if [ ! -x /usr/bin/chromium ]; then echo "deps: apt-get installed chromium but /usr/bin/chromium is still missing" >&2; exit 1; fi; \
	fi
	@# The digest-history tests need an S3 server that keeps object versions: moto's.
	@# It is Python's moto[server] package, which this machine image ships; PyPI is
	@# not reachable from here, so a machine without it stops here, loudly.
	@command -v moto_server >/dev/null || { echo "deps: moto_server is missing (Python package moto[server]); the audit digest-history tests need it" >&2; exit 1; }

$(NPM_STAMP): test/package.json test/package-lock.json
	npm ci --prefix test --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: test
test: deps lint ## Install what the tests need and run every test (race detector on)
	$(GO) mod verify
	$(GO) mod tidy -diff
	$(GO) test -race -count=1 -timeout 25m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@unformatted=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

.PHONY: fuzz
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline exceeded"
# when -fuzztime ends while a starved worker is mid-call (golang/go#75804, fixed in Go
# 1.27); on this project's 2-core CI about one short run in twenty hits it. Such a run
# writes no reproducer and is run again, up to three tries. A real finding always
# prints "Failing input written" and fails at once.
fuzz: ## Run every fuzz target for FUZZTIME each (default 60s)
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    for try in 1 2 3; do \
	      if $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg > $$log 2>&1; then break; fi; \
	      if [ $$try != 3 ] && grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
	        echo "  deadline race at the end of -fuzztime (golang/go#75804), no failing input: running it again"; \
	        continue; \
	      fi; \
	      cat $$log; exit 1; \
	    done; \
	  done; \
	done

.PHONY: screenshots
screenshots: deps ## Save the approval page as a person sees it (docs/screenshots/approve-*.png) from TestTypeScriptSDKv2Approval's browser flows
	AACMCP_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run '^TestTypeScriptSDKv2Approval$$' ./test/clients/

.PHONY: bench
bench: $(NPM_STAMP) ## Benchmark against a bare mcp-go server and the TypeScript SDK; writes bench/REPORT.md
	npm ci --prefix bench/tspeer --no-audit --no-fund --loglevel=error
	$(GO) run ./bench/cmd/bench -out bench/REPORT.md

.PHONY: bench-compare
bench-compare: $(NPM_STAMP) ## Alternate bench runs of BASE=<commit> and HEAD (throughput, writes); writes bench/COMPARE.md
	@test -n "$(BASE)" || { echo "usage: make bench-compare BASE=<commit> [RUNS=3]"; exit 2; }
	npm ci --prefix bench/tspeer --no-audit --no-fund --loglevel=error
	$(GO) run ./bench/cmd/compare -base $(BASE) -runs $(or $(RUNS),3)

.PHONY: soak
soak: deps ## The full load and crash tests: 200 clients x 20,000 mixed calls, then kill -9 mid-load
	$(GO) test -count=1 -timeout 60m -v -run 'TestLoadConsistency|TestCrashRecovery' ./test/load -args -clients 200 -calls 20000

.PHONY: build
build: ## Build dist/<function>/bootstrap for every Lambda function (ARCH=arm64|amd64)
	@for fn in $(FUNCTIONS); do \
	  mkdir -p dist/$$fn; \
	  GOOS=linux GOARCH=$(ARCH) CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w" -o dist/$$fn/bootstrap ./functions/$$fn; \
	  printf '%-12s %s\n' $$fn "$$(du -h dist/$$fn/bootstrap | cut -f1)"; \
	done

.PHONY: cli
cli: ## Build the aacmcp CLI into dist/aacmcp
	$(GO) build -o $(CLI) ./cmd/aacmcp

.PHONY: synth
# The front door needs the stack's region (its Lambda@Edge function is in us-east-1 and
# referred to across regions). `cdk synth` and `cdk deploy` take it from your AWS
# configuration; offline it is SYNTH_REGION.
SYNTH_REGION ?= $(or $(CDK_DEFAULT_REGION),$(AWS_REGION),$(AWS_DEFAULT_REGION),eu-west-1)
synth: build ## Synthesize the CloudFormation templates offline into cdk.out/ (SYNTH_REGION=...)
	CDK_OUTDIR=cdk.out CDK_DEFAULT_REGION=$(SYNTH_REGION) $(GO) run ./infra

.PHONY: deploy
deploy: ## Deploy the stacks (Aacmcp and its us-east-1 AacmcpEdge) with the CDK CLI (needs AWS credentials; see docs/deploy.md)
	npx --yes aws-cdk@2 deploy --all --require-approval broadening

.PHONY: vuln
vuln: ## govulncheck (needs the online vulnerability database: not part of CI)
	$(GO) run golang.org/x/vuln/cmd/govulncheck@latest ./...

.PHONY: clean
clean: ## Remove build outputs (keeps .aacmcp data)
	rm -rf dist cdk.out
