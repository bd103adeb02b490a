// Package ci holds the tests of the CI script itself (.ci/run, which go
// test does not see: directories starting with a dot are not packages).
// It has no code of its own.
package ci
