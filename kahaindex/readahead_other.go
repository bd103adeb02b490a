//go:build !(linux && (amd64 || arm64))

package kahaindex

// newPageBatcher: batched reads are Linux's (readahead_aio.go).
func newPageBatcher() pageBatcher { return nil }
