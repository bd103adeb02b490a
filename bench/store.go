package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// cachedStore is a generated store in the cache: DIR/store holds the
// db-N.log files, DIR/manifest.json describes them.
type cachedStore struct {
	dir, store string
	man        *manifest
	// index: store is the broker-indexed copy of the generated journal
	// (indexed.go); nil with -bare, where store is the generated one.
	index *indexInfo
}

// storeKey names a configuration in the cache.
func storeKey(cfg genConfig) string {
	key := fmt.Sprintf("store-v%d-%d-f%d-b%d-s%d", genVersion, cfg.Bytes, cfg.FileLength, cfg.BatchSize, cfg.Seed)
	if cfg.Shape != "" {
		key += "-" + cfg.Shape
	}
	return key
}

// ensureStore returns the cached store of cfg, generating it first when it
// is missing (or regen). Generation writes into DIR.tmp and renames it
// when complete, so an interrupted run leaves nothing that looks cached.
func ensureStore(root, cache string, cfg genConfig, regen bool, log io.Writer) (*cachedStore, error) {
	cs := &cachedStore{dir: filepath.Join(cache, storeKey(cfg))}
	cs.store = filepath.Join(cs.dir, "store")
	if !regen {
		if man, err := readManifest(cs.dir); err == nil && man.Config == cfg {
			cs.man = man
			fmt.Fprintf(log, "bench: using cached store %s (%d files, %s)\n", cs.store, man.Files, mib(man.Bytes))
			return cs, nil
		}
	}
	if err := os.RemoveAll(cs.dir); err != nil {
		return nil, err
	}
	man, err := generateInto(root, cs.dir, cfg, log)
	if err != nil {
		return nil, err
	}
	cs.man = man
	return cs, nil
}

func generateInto(root, dir string, cfg genConfig, log io.Writer) (*manifest, error) {
	if cfg.Shape == brokerShape {
		return brokerGenerateInto(root, dir, cfg, log)
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(tmp, "store"), 0o755); err != nil {
		return nil, err
	}
	ts, err := loadTemplates(filepath.Join(root, "testdata", "stores"))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "bench: generating %s of journal in %s from %d fixture records ...\n", mib(cfg.Bytes), tmp, ts.records)
	start := time.Now()
	man, err := generate(filepath.Join(tmp, "store"), cfg, ts)
	if err != nil {
		return nil, err
	}
	man.Seconds = time.Since(start).Seconds()
	fmt.Fprintf(log, "bench: generated %d files, %s, %d records in %.1f s\n", man.Files, mib(man.Bytes), man.Records, man.Seconds)
	if err := writeManifest(tmp, man); err != nil {
		return nil, err
	}
	return man, os.Rename(tmp, dir)
}

func readManifest(dir string) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.Version != genVersion {
		return nil, fmt.Errorf("manifest version %d", m.Version)
	}
	return &m, nil
}

func writeManifest(dir string, m *manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o644)
}

func printManifest(w io.Writer, cs *cachedStore) error {
	fmt.Fprintf(w, "store: %s\n", cs.store)
	b, err := json.MarshalIndent(cs.man, "", "  ")
	if err != nil {
		return err
	}
	if _, err = fmt.Fprintf(w, "%s\n", b); err != nil || cs.index == nil {
		return err
	}
	fmt.Fprintf(w, "%s\n", cs.index.describe())
	b, err = json.MarshalIndent(cs.index, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
