//go:build !cairnpprof

package bench

// profilingBuild: a test build without -tags cairnpprof serves no profiles
// (TestProfileDirEndToEnd expects the refusal).
const profilingBuild = false
