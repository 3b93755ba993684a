package main

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Lambda function names: the folders of functions/ that the stack knows how to wire.
// Each builds to dist/<name>/bootstrap (provided.al2023, arm64).
const (
	fnMCP        = "mcp"
	fnAuthorizer = "authorizer"
	fnForwarder  = "forwarder"
	fnOAuth      = "oauth"
	fnDigest     = "digest"
)

// wiredFunctions is every function the stack deploys, sorted.
var wiredFunctions = []string{fnAuthorizer, fnDigest, fnForwarder, fnMCP, fnOAuth}

// discoverFunctions lists the Go main packages directly under dir (functions/) and checks
// that they are exactly the functions the stack wires. A new folder must fail synth rather
// than be silently left undeployed, and a missing one must not deploy a stack whose API
// points at nothing. Folders without a main package (shared helpers, and functions/edge,
// the Node.js Lambda@Edge function that frontdoor.go deploys) are not Go functions.
func discoverFunctions(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing functions: %w", err)
	}
	var found []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		isMain, err := isMainPackage(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if isMain {
			found = append(found, e.Name())
		}
	}
	slices.Sort(found)
	var errs []error
	for _, name := range found {
		if !slices.Contains(wiredFunctions, name) {
			errs = append(errs, fmt.Errorf("functions/%s is a Lambda main package the stack does not wire: add it to infra/functions.go", name))
		}
	}
	for _, name := range wiredFunctions {
		if !slices.Contains(found, name) {
			errs = append(errs, fmt.Errorf("functions/%s is missing: the stack wires it", name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return found, nil
}

// isMainPackage reports whether dir holds a non-test Go file of package main.
func isMainPackage(dir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly)
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", f, err)
		}
		if file.Name.Name == "main" {
			return true, nil
		}
	}
	return false, nil
}

// distAssets maps each function to its built asset directory dist/<name>, which must
// hold the bootstrap binary: deploying an empty or stale directory would replace a
// working function with a broken one.
func distAssets(root string, names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	var errs []error
	for _, name := range names {
		dir := filepath.Join(root, "dist", name)
		if st, err := os.Stat(filepath.Join(dir, "bootstrap")); err != nil || !st.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("dist/%s/bootstrap not found: build the functions first (make build; cdk.json's app command does)", name))
			continue
		}
		out[name] = dir
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
