import java.io.File;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;

import org.apache.activemq.broker.ConnectionContext;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTextMessage;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.MessageAck;
import org.apache.activemq.command.MessageId;
import org.apache.activemq.command.ProducerId;
import org.apache.activemq.command.SubscriptionInfo;
import org.apache.activemq.store.MessageStore;
import org.apache.activemq.store.TopicMessageStore;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;

/**
 * Makes stores whose index (db.data) exercises what kahaindex reads: B-trees with branch nodes, multi-page nodes,
 * all three priority classes, fragmented ack-position sets, removed and retroactive subscriptions, and an index
 * left by a broker that did not stop (unclean header, non-empty db.redo). A standalone KahaDBPersistenceAdapter
 * (no BrokerService), journal and index disk syncs off, periodic checkpoints off. Takes a few seconds.
 *
 * Usage: IndexStores OUTDIR    -> OUTDIR/index-clean (stopped cleanly) and OUTDIR/index-unclean (a copy of the
 *                                 same store taken while the adapter was running, after a checkpoint)
 */
public final class IndexStores {
    private IndexStores() {}

    static final ConnectionContext CTX = new ConnectionContext();
    static long seq = 0;

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: IndexStores OUTDIR");
            System.exit(2);
        }
        Logs.setup(null);
        File out = new File(args[0]);
        File clean = new File(out, "index-clean");
        File unclean = new File(out, "index-unclean");
        clean.mkdirs();
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setDirectory(clean);
        a.setCheckpointInterval(0);
        a.setCleanupInterval(0);
        a.setCleanupOnStop(false);
        a.setJournalMaxFileLength(1 << 20);
        a.setPreallocationScope("none");
        a.setEnableJournalDiskSyncs(false);
        a.setEnableIndexDiskSyncs(false);
        a.start();

        ProducerId pid = new ProducerId("ID:indexstores-1:1:1");
        // A deep queue: branch nodes in the order, message-id and location indexes; holes from acks.
        ActiveMQQueue deep = new ActiveMQQueue("Q.DEEP");
        MessageStore ds = queue(a, deep);
        MessageId[] ids = new MessageId[3000];
        for (int i = 0; i < ids.length; i++) ids[i] = send(ds, deep, pid, 4, 60);
        for (int i = 0; i < 1500; i += 3) ds.removeMessage(CTX, ack(deep, ids[i]));
        for (int i = 2000; i < 2600; i++) ds.removeMessage(CTX, ack(deep, ids[i]));

        // Long message ids: nodes of at most three keys overflow into several pages.
        ActiveMQQueue longIds = new ActiveMQQueue("Q.LONGID");
        MessageStore ls = queue(a, longIds);
        ProducerId longPid = new ProducerId("ID:" + repeat("long-producer-", 220) + ":1:1");
        for (int i = 0; i < 7; i++) send(ls, longIds, longPid, 4, 20);

        // A prioritized queue with all three classes (0-3 LO, 4 DEF, 5-9 HI).
        ActiveMQQueue prio = new ActiveMQQueue("Q.PRIO");
        MessageStore ps = queue(a, prio);
        ps.setPrioritizedMessages(true);
        MessageId[] pids = new MessageId[60];
        for (int i = 0; i < pids.length; i++) pids[i] = send(ps, prio, pid, i % 10, 40);
        for (int i = 0; i < pids.length; i += 7) ps.removeMessage(CTX, ack(prio, pids[i]));

        // A drained queue: every leaf emptied again.
        ActiveMQQueue drained = new ActiveMQQueue("Q.DRAINED");
        MessageStore dr = queue(a, drained);
        MessageId[] dids = new MessageId[400];
        for (int i = 0; i < dids.length; i++) dids[i] = send(dr, drained, pid, 4, 40);
        for (MessageId id : dids) dr.removeMessage(CTX, ack(drained, id));

        // A topic with fragmented ack positions, a removed subscription, a retroactive one and a big one.
        ActiveMQTopic frag = new ActiveMQTopic("T.FRAG");
        TopicMessageStore ts = a.createTopicMessageStore(frag);
        sub(ts, frag, "c-odd", "s", null, false);
        sub(ts, frag, "c-none", "s", null, false);
        sub(ts, frag, "c-gone", "s", null, false);
        sub(ts, frag, "c-big", "s", "colour = '" + repeat("blue", 1500) + "'", false);
        MessageId[] tids = new MessageId[1200];
        for (int i = 0; i < tids.length; i++) tids[i] = send(ts, frag, pid, 4, 30);
        for (int i = 0; i < tids.length; i += 2) ts.acknowledge(CTX, "c-odd", "s", tids[i], ack(frag, tids[i]));
        for (int i = 0; i < 100; i++) ts.acknowledge(CTX, "c-big", "s", tids[i], ack(frag, tids[i]));
        ts.deleteSubscription("c-gone", "s");
        sub(ts, frag, "c-retro", "s", null, true);
        sub(ts, frag, "c-late", "s", null, false);
        for (int i = 0; i < 5; i++) send(ts, frag, pid, 4, 30);

        // A topic whose messages every subscription acknowledged: the next sequence comes from the last acks.
        ActiveMQTopic done = new ActiveMQTopic("T.DONE");
        TopicMessageStore dn = a.createTopicMessageStore(done);
        sub(dn, done, "c1", "s", null, false);
        sub(dn, done, "c2", "s", null, false);
        for (int i = 0; i < 30; i++) {
            MessageId id = send(dn, done, pid, 4, 30);
            dn.acknowledge(CTX, "c1", "s", id, ack(done, id));
            dn.acknowledge(CTX, "c2", "s", id, ack(done, id));
        }

        // A topic whose only subscription was removed: the destination goes.
        ActiveMQTopic gone = new ActiveMQTopic("T.GONE");
        TopicMessageStore gn = a.createTopicMessageStore(gone);
        sub(gn, gone, "c", "s", null, false);
        send(gn, gone, pid, 4, 30);
        gn.deleteSubscription("c", "s");

        // The index as a running broker leaves it: unclean header, the last page batch in db.redo.
        a.checkpoint(false);
        unclean.mkdirs();
        File[] files = clean.listFiles();
        if (files != null) {
            for (File f : files) {
                if (f.getName().equals("lock")) continue;
                Files.copy(f.toPath(), new File(unclean, f.getName()).toPath(), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        a.stop();
        System.out.println("IndexStores: " + clean + " " + unclean);
    }

    /**
     * Without a BrokerService nothing creates a queue's stored destination before its first message, and
     * MessageDatabase drops adds for a destination the index does not have: the store's start() creates it
     * (it recovers the store statistics), as the broker's Queue does.
     */
    static MessageStore queue(KahaDBPersistenceAdapter a, ActiveMQQueue q) throws Exception {
        MessageStore s = a.createQueueMessageStore(q);
        s.start();
        return s;
    }

    static String repeat(String s, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) b.append(s);
        return b.toString();
    }

    static MessageId send(MessageStore s, ActiveMQDestination d, ProducerId pid, int priority, int size) throws Exception {
        ActiveMQTextMessage m = new ActiveMQTextMessage();
        MessageId id = new MessageId(pid, ++seq);
        m.setMessageId(id);
        m.setDestination(d);
        m.setPersistent(true);
        m.setProducerId(pid);
        m.setPriority((byte) priority);
        m.setText(repeat("x", size));
        s.addMessage(CTX, m);
        return id;
    }

    static MessageAck ack(ActiveMQDestination d, MessageId id) {
        MessageAck a = new MessageAck();
        a.setAckType(MessageAck.STANDARD_ACK_TYPE);
        a.setDestination(d);
        a.setFirstMessageId(id);
        a.setLastMessageId(id);
        a.setMessageCount(1);
        return a;
    }

    static void sub(TopicMessageStore s, ActiveMQTopic t, String client, String name, String selector, boolean retro)
            throws Exception {
        SubscriptionInfo si = new SubscriptionInfo(client, name);
        si.setDestination(t);
        si.setSubscribedDestination(t);
        si.setSelector(selector);
        s.addSubscription(si, retro);
    }
}
