package refgraph

// A queue with prioritizedMessages=true is not delivered in store order
// (the order index: class HI, DEF, LO, by sequence within a class). Its
// store cursor (QueueStorePrefetch) keeps a batch ordered by JMS priority,
// first in first out within a priority (PrioritizedPendingList), and
// refills it with the next messages in store order only when it is empty,
// as many as the page being paged in asks for (AbstractStoreCursor
// .fillBatch); whenever the queue's pending-dispatch list holds fewer than
// maxPageSize (200) messages, the queue pages in min(200, messages left)
// from the cursor (Queue.doPageInForDispatch); the pending-dispatch list
// is ordered by JMS priority too, and the broker dispatches from its head
// while the consumer has room. Checked against the real broker
// (internal/difftest, brokerkit README "The order a restarted broker
// delivers a prioritized queue").
//
// So the order depends on the consumer's prefetch: with a prefetch of at
// least a page (the default queue prefetch is 1000) each page of 200 in
// store order is sorted on its own and the pages follow each other — what
// a QueueBrowser shows too; with prefetch 1 the window slides page by page.

// MaxPageSize is PolicyEntry.maxPageSize's default: how many messages a
// queue pages in from its store cursor at a time.
const MaxPageSize = 200

// DefaultQueuePrefetch is ActiveMQPrefetchPolicy's default queue prefetch.
const DefaultQueuePrefetch = 1000

// DispatchOrder is the order in which a 5.17.2 broker delivers the
// messages of a prioritized queue to one consumer with the given prefetch
// that acknowledges each message it receives, given their JMS priorities
// in store order. It returns store positions. skip reports messages the
// broker drops where it pages them in (expired ones); nil: none.
func DispatchOrder(prios []int32, pageSize, prefetch int, skip func(i int) bool) []int {
	if pageSize <= 0 {
		pageSize = MaxPageSize
	}
	if prefetch <= 0 {
		prefetch = 1
	}
	var batch, pending prioQueue
	next, left := 0, len(prios) // next store position; messages still in the cursor
	out := make([]int, 0, len(prios))
	for left > 0 || pending.n > 0 {
		if pending.n < pageSize && left > 0 {
			toPageIn := min(pageSize, left)
			for count := 0; count < toPageIn; {
				if batch.n == 0 {
					if next >= len(prios) {
						break
					}
					end := min(next+toPageIn, len(prios))
					for i := next; i < end; i++ {
						batch.push(i, prios[i])
					}
					next = end
				}
				i := batch.pop()
				left--
				if skip != nil && skip(i) {
					continue
				}
				pending.push(i, prios[i])
				count++
			}
		}
		for k := 0; k < prefetch && pending.n > 0; k++ {
			out = append(out, pending.pop())
		}
	}
	return out
}

// prioQueue is a list ordered by JMS priority (9 first), first in first
// out within a priority (PrioritizedPendingList).
type prioQueue struct {
	byPrio [10][]int
	head   [10]int
	n      int
}

func (q *prioQueue) push(i int, prio int32) {
	p := min(max(int(prio), 0), 9)
	q.byPrio[p] = append(q.byPrio[p], i)
	q.n++
}

// pop removes the head; -1 when the list is empty.
func (q *prioQueue) pop() int {
	for p := 9; p >= 0; p-- {
		if q.head[p] < len(q.byPrio[p]) {
			i := q.byPrio[p][q.head[p]]
			q.head[p]++
			if q.head[p] == len(q.byPrio[p]) {
				q.byPrio[p], q.head[p] = q.byPrio[p][:0], 0
			}
			q.n--
			return i
		}
	}
	return -1
}
