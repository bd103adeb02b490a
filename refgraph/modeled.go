package refgraph

import "github.com/kahafs/kahafs/codec"

// Modeled reports whether the replay models commands of type t: what the
// broker's KahaDB store (MessageDatabase) does with them is what Builder
// does. The job scheduler's commands (KAHA_ADD_SCHEDULED_JOB_COMMAND ..
// KAHA_DESTROY_SCHEDULER_COMMAND) belong to another store
// (JobSchedulerStoreImpl) with its own index and cleanup rules: a journal
// that holds them is not a KahaDB store's, and what its cleanup deletes
// is not what this package computes.
func Modeled(t codec.EntryType) bool {
	switch t {
	case codec.AddScheduledJobCommand, codec.RescheduleJobCommand, codec.RemoveScheduledJobCommand,
		codec.RemoveScheduledJobsCommand, codec.DestroySchedulerCommand:
		return false
	}
	return t < codec.NumEntryTypes
}
