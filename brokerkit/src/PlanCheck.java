import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.activemq.broker.ConnectionContext;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.Message;
import org.apache.activemq.command.MessageAck;
import org.apache.activemq.command.MessageId;
import org.apache.activemq.command.XATransactionId;
import org.apache.activemq.store.MessageRecoveryListener;
import org.apache.activemq.store.MessageStore;
import org.apache.activemq.store.PersistenceAdapter;
import org.apache.activemq.store.TopicMessageStore;
import org.apache.activemq.store.TransactionRecoveryListener;
import org.apache.activemq.store.TransactionStore;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.disk.journal.Location;

/**
 * Does one action of `kahafs plan` on a KahaDB store with the broker's own classes, then lets the broker
 * clean up, and reports which data files that cleanup deleted. MODIFIES the store: run it on a copy.
 *
 * Usage: PlanCheck STORE_DIR OUT.json --max-file-length N ACTION ARGS... [ACTION ARGS...]...
 *   none                                  only the restart's cleanup (what is deleted anyway)
 *   purge queue://NAME                    as Queue.purge (JMX purge) does: one STANDARD ack per message the
 *                                         store recovers (MessageStore.removeMessage)
 *   delete-subscription topic://NAME CLIENT SUB   TopicMessageStore.deleteSubscription
 *   commit XID | rollback XID             the prepared XA transaction whose XATransactionId.toString() is XID,
 *                                         through the TransactionStore that recovered it
 * Several actions are done one after the other, then the one cleanup.
 * Like Inspect: a standalone KahaDBPersistenceAdapter on the store as it is (index included), periodic
 * checkpoints off; the prepared transactions are recovered first (as a broker does); the action; then stop()
 * (the stop-time checkpoint with cleanup).
 *
 * Output: {"deleted":[..],"filesBefore":[..],"filesAfter":[..],"created":[..],"cleanupLines":[..],
 *          "writes":{"records":N,"bytes":N,"sizes":{SIZE:COUNT}}, "destinationLength":N, "messageIdLengths":{LEN:COUNT}}
 * writes: the records the action appended (each record's size as the journal's Location says, and their sum).
 */
public final class PlanCheck {
    private PlanCheck() {}

    static final class Collector implements MessageRecoveryListener {
        final List<MessageId> ids = new ArrayList<>();
        @Override public boolean recoverMessage(Message m) { ids.add(m.getMessageId()); return true; }
        @Override public boolean recoverMessageReference(MessageId id) { ids.add(id); return true; }
        @Override public boolean hasSpace() { return true; }
        @Override public boolean isDuplicate(MessageId id) { return false; }
    }


    static void doAction(KahaDBPersistenceAdapter a, TransactionStore txs, List<XATransactionId> prepared, ConnectionContext ctx,
                         String action, String[] x, Map<String, Object> res, TreeMap<Integer, Integer> sizes,
                         TreeMap<Integer, Integer> idLens, long[] total) throws Exception {
        Location start = a.getStore().getJournal().getLastAppendLocation();
        switch (action) {
            case "none":
                break;
            case "purge": {
                ActiveMQDestination d = ActiveMQDestination.createDestination(x[0], ActiveMQDestination.QUEUE_TYPE);
                MessageStore ms = a.createQueueMessageStore((ActiveMQQueue) d);
                ms.start();
                Collector c = new Collector();
                ms.recover(c);
                res.put("destinationLength", d.getPhysicalName().length());
                for (MessageId id : c.ids) {
                    // Queue.removeMessage(ConnectionContext, QueueMessageReference): the ack a purge writes
                    MessageAck ack = new MessageAck();
                    ack.setAckType(MessageAck.STANDARD_ACK_TYPE);
                    ack.setDestination(d);
                    ack.setMessageID(id);
                // a synchronous write (the broker's purge writes without sync): the journal's last append
                // location is then this record's when removeMessage returns; the flag does not change the
                // record's size (a bit of the marshalled ack's boolean stream)
                ack.setResponseRequired(true);
                    ms.removeMessage(ctx, ack);
                    Location l = a.getStore().getJournal().getLastAppendLocation();
                    sizes.merge(l.getSize(), 1, Integer::sum);
                    idLens.merge(id.toProducerKey().length(), 1, Integer::sum);
                    total[0]++;
                    total[1] += l.getSize();
                }
                break;
            }
            case "delete-subscription":
                deleteSubscription(a, x);
                break;
            case "commit":
            case "rollback":
                decide(txs, prepared, action, x[0]);
                break;
            default:
                throw new IllegalArgumentException("unknown action " + action);
        }
        Location end = a.getStore().getJournal().getLastAppendLocation();
        if (!action.equals("purge") && end != null && (start == null || end.compareTo(start) != 0)) {
            sizes.merge(end.getSize(), 1, Integer::sum);
            total[0]++;
            total[1] += end.getSize();
        }
    }

    /** delete-subscription: x is destination, clientId, subscriptionName (LayoutPlanCheck too). */
    static void deleteSubscription(PersistenceAdapter a, String[] x) throws Exception {
        ActiveMQDestination d = ActiveMQDestination.createDestination(x[0], ActiveMQDestination.TOPIC_TYPE);
        TopicMessageStore ts = a.createTopicMessageStore((ActiveMQTopic) d);
        ts.start();
        ts.deleteSubscription(x[1], x[2]);
    }

    /** commit or rollback (action) of the prepared transaction named xid (LayoutPlanCheck too). */
    static void decide(TransactionStore txs, List<XATransactionId> prepared, String action, String xid) throws Exception {
        XATransactionId t = null;
        for (XATransactionId p : prepared) {
            if (p.toString().equals(xid)) t = p;
        }
        if (t == null) throw new IllegalArgumentException("no prepared transaction " + xid + " in " + prepared);
        if (action.equals("commit")) txs.commit(t, true, null, null);
        else txs.rollback(t);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5 || !args[2].equals("--max-file-length")) {
            System.err.println("usage: PlanCheck STORE_DIR OUT.json --max-file-length N ACTION ARGS...");
            System.exit(2);
        }
        File store = new File(args[0]);
        File out = new File(args[1]);
        int maxLen = Integer.parseInt(args[3]);
        Logs.setup(null, false);

        TreeSet<Integer> before = Inspect.fileIds(store);
        KahaDBPersistenceAdapter a = new KahaDBPersistenceAdapter();
        a.setDirectory(store);
        a.setJournalMaxFileLength(maxLen);
        a.setCheckpointInterval(0);
        a.setCleanupInterval(0);
        a.start();
        Map<String, Object> res = new LinkedHashMap<>();
        TreeMap<Integer, Integer> sizes = new TreeMap<>();
        TreeMap<Integer, Integer> idLens = new TreeMap<>();
        long[] total = new long[2];
        try {
            TransactionStore txs = a.createTransactionStore();
            List<XATransactionId> prepared = new ArrayList<>();
            txs.recover(new TransactionRecoveryListener() {
                @Override
                public void recover(XATransactionId xid, Message[] added, MessageAck[] acks) {
                    prepared.add(xid);
                }
            });
            ConnectionContext ctx = new ConnectionContext();
            for (int i = 4; i < args.length; ) {
                String action = args[i];
                int arity = action.equals("none") ? 0 : action.equals("delete-subscription") ? 3 : 1;
                if (i + 1 + arity > args.length) throw new IllegalArgumentException(action + " needs " + arity + " argument(s)");
                String[] x = java.util.Arrays.copyOfRange(args, i + 1, i + 1 + arity);
                i += 1 + arity;
                doAction(a, txs, prepared, ctx, action, x, res, sizes, idLens, total);
            }
        } finally {
            a.stop();
        }
        TreeSet<Integer> after = Inspect.fileIds(store);
        TreeSet<Integer> deleted = new TreeSet<>(before);
        deleted.removeAll(after);
        TreeSet<Integer> created = new TreeSet<>(after);
        created.removeAll(before);
        res.put("filesBefore", new ArrayList<>(before));
        res.put("filesAfter", new ArrayList<>(after));
        res.put("deleted", new ArrayList<>(deleted));
        res.put("created", new ArrayList<>(created));
        res.put("cleanupLines", Logs.cleanupLines());
        Map<String, Object> w = new LinkedHashMap<>();
        w.put("records", total[0]);
        w.put("bytes", total[1]);
        Map<String, Object> sz = new LinkedHashMap<>();
        for (Map.Entry<Integer, Integer> e : sizes.entrySet()) sz.put(String.valueOf(e.getKey()), e.getValue());
        w.put("sizes", sz);
        res.put("writes", w);
        Map<String, Object> il = new LinkedHashMap<>();
        for (Map.Entry<Integer, Integer> e : idLens.entrySet()) il.put(String.valueOf(e.getKey()), e.getValue());
        res.put("messageIdLengths", il);
        Files.write(out.toPath(), Json.write(res).getBytes(StandardCharsets.UTF_8));
        Logs.flush();
        System.out.println("PlanCheck: wrote " + out);
    }
}
