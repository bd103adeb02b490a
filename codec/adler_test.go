package codec

import "hash/adler32"

func adlerOf(b []byte) uint32 { return adler32.Checksum(b) }
