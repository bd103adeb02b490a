package difftest

import "github.com/kahafs/kahafs/refgraph"

// MaxPageSize is PolicyEntry.maxPageSize's default in 5.17.2: how many
// messages a queue pages in from its store cursor at a time.
const MaxPageSize = refgraph.MaxPageSize

// MaxBrowsePageSize is PolicyEntry.maxBrowsePageSize's default: a
// QueueBrowser sees at most this many messages.
const MaxBrowsePageSize = 400

// DefaultQueuePrefetch is ActiveMQPrefetchPolicy's default queue prefetch,
// the one BrokerView's consumer uses.
const DefaultQueuePrefetch = refgraph.DefaultQueuePrefetch

// Paged is a message of a prioritized queue as the dispatch rule needs it:
// its JMS priority and whether it had expired when the broker paged it in.
type Paged struct {
	Priority int
	Expired  bool
}

// DispatchOrder is the order in which a 5.17.2 broker delivers the
// messages of a prioritized queue (prioritizedMessages=true) to a single
// consumer that receives and acknowledges them one at a time, prefetch
// messages in flight at most, given the queue's messages in store order
// (the order of the KahaDB order index: class HI, DEF, LO, by sequence;
// without the messages acked inside prepared transactions, which the store
// skips). It returns the store positions of the delivered messages; expired
// ones are dropped where the broker pages them in.
//
// The rule, from Queue.doPageInForDispatch, AbstractStoreCursor and
// PrioritizedPendingList, and checked against the real broker
// (testdata/priority-paging.json):
//
//   - the store cursor holds a batch ordered by JMS priority (first in,
//     first out within a priority); only when the batch is empty does it
//     refill it with the next messages in store order, as many as the page
//     being paged in asks for;
//   - whenever the queue's pending list holds fewer than pageSize messages,
//     the queue pages in min(pageSize, messages left in the cursor)
//     messages, taking the cursor's next ones; an expired message is
//     dropped and does not count;
//   - the pending list is ordered by JMS priority too; the broker
//     dispatches from its head while the consumer has room, and the
//     consumer's acknowledgements free it before the next page-in check.
//
// With prefetch 1 the delivery follows priority over a window that slides
// page by page; with a prefetch of at least pageSize each page is sorted
// on its own and the pages follow each other (what a QueueBrowser shows,
// cut at MaxBrowsePageSize). It is refgraph.DispatchOrder, the rule the
// tree uses, with the broker's expiry at its start.
func DispatchOrder(msgs []Paged, pageSize, prefetch int) []int {
	prios := make([]int32, len(msgs))
	for i, m := range msgs {
		prios[i] = int32(m.Priority)
	}
	return refgraph.DispatchOrder(prios, pageSize, prefetch, func(i int) bool { return msgs[i].Expired })
}
