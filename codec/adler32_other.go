//go:build !amd64 || purego

package codec

// adler32Update continues the checksum sum (as returned for a prefix) over b.
func adler32Update(sum uint32, b []byte) uint32 { return adler32UpdateGo(sum, b) }

// adlerArchImpls: no assembly here.
func adlerArchImpls() []adlerImpl { return nil }
