package store

import (
	"fmt"
	"sort"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// An mKahaDB's txStore is the journal of the transactions that span its
// stores (MultiKahaDBTransactionStore): a KAHA_PREPARE_COMMAND records that
// a transaction is to be committed in every store it spans, a
// KAHA_COMMIT_COMMAND that this is done. Its broker's cleanup
// (txStoreCleanup) deletes every file but the one it appends to and
// those holding the prepare record of a commit not completed; a broker
// restarted on it completes those commits (recoverPendingLocalTransactions).
// A KahaDB replay ignores a prepare without operations, so the analysis of
// a txStore would call such a file free: pinTxStoreOutcomes keeps it.

// pinTxStoreOutcomes pins, in the analysis of a txStore, every file that
// holds the prepare record of a transaction the txStore has not recorded
// as committed or rolled back.
func pinTxStoreOutcomes(a *Analysis, ro codec.ReadOptions) error {
	pending := map[string]codec.Location{}
	for _, fi := range a.Layout.Journal.Files {
		_, err := codec.ScanFile(fi, ro, func(r codec.Record, c *codec.Command) error {
			switch c.Type {
			case codec.PrepareCommand:
				pending[c.Tx.String()] = r.Loc
			case codec.CommitCommand, codec.RollbackCommand:
				delete(pending, c.Tx.String())
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(pending))
	for id := range pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		loc := pending[id]
		a.Graph.Pin(loc.File, refgraph.Reason{Kind: refgraph.KindTxStoreOutcome,
			Text: fmt.Sprintf("holds the txStore's record (%d:%d) that transaction %s is to be committed in every store it spans, not yet done: the broker keeps the file until it has completed the commit",
				loc.File, loc.Offset, id),
			Transactions: []string{id}, Location: fmt.Sprintf("%d:%d", loc.File, loc.Offset), Loc: loc})
	}
	return nil
}
