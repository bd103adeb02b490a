package compact

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// marker is written into the new store before the swap. Its presence in
// the store path means the exchange happened and the original is at Temp
// (until moved to Backup).
type marker struct {
	Original string `json:"original"`
	Backup   string `json:"backup"`
	Temp     string `json:"temp"`
}

func writeMarker(dir string, m marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileSync(filepath.Join(dir, markerName), b)
}

func readMarker(dir string) (marker, error) {
	var m marker
	b, err := os.ReadFile(filepath.Join(dir, markerName))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("compaction marker %s: %w", filepath.Join(dir, markerName), err)
	}
	if m.Temp == "" || m.Backup == "" {
		return m, fmt.Errorf("compaction marker %s: incomplete", filepath.Join(dir, markerName))
	}
	return m, nil
}
