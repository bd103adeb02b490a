import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.ConnectionContext;
import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;
import org.apache.activemq.command.Message;
import org.apache.activemq.command.MessageAck;
import org.apache.activemq.command.MessageId;
import org.apache.activemq.command.XATransactionId;
import org.apache.activemq.store.MessageStore;
import org.apache.activemq.store.PersistenceAdapter;
import org.apache.activemq.store.TopicMessageStore;
import org.apache.activemq.store.TransactionRecoveryListener;
import org.apache.activemq.store.TransactionStore;
import org.apache.activemq.store.kahadb.KahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.MultiKahaDBPersistenceAdapter;
import org.apache.activemq.store.kahadb.disk.journal.Location;

/**
 * PlanCheck on an mKahaDB layout: does actions of `kahafs plan` on a broker data directory with the real
 * MultiKahaDBPersistenceAdapter (configured as LayoutWorkload's and MultiStore's brokers were: filters queue
 * ORDERS.&gt;, topic EVENTS.&gt; and the catch-all, one store #210 or one per destination; every journal 16 KiB),
 * lets every store clean up, and reports per store directory which data files that cleanup deleted and which
 * records the action appended to each. MODIFIES DATA_DIR: run it on a copy.
 *
 * Usage: LayoutPlanCheck DATA_DIR OUT.json --mode filtered|perdest ACTION ARGS... [ACTION ARGS...]...
 *   actions as PlanCheck's (none, purge queue://Q, delete-subscription topic://T CLIENT SUB, commit XID,
 *   rollback XID), done through the mKahaDB adapter: its message stores (the store of the filter the
 *   destination matches, behind the adapter's transaction proxy) and its MultiKahaDBTransactionStore (a
 *   prepared XA transaction spanning stores is committed or rolled back in each of them, the outcome recorded in
 *   txStore/ as the broker does).
 * The broker: a full BrokerService as LayoutWorkload view starts it (no connectors, JMX off, scheduler off so
 * that no job fires, each KahaDB store's periodic checkpoint and cleanup off and cleanupOnStop true, the
 * transaction store's cleanup every 200 ms); the prepared transactions are recovered (as at start), the
 * actions done, 1.5 s for the transaction store's cleanup, then stop (each store's stop-time cleanup).
 *
 * Output: {"stores":{REL:{"filesBefore":[..],"filesAfter":[..],"deleted":[..],"created":[..],
 *          "writes":{"records":N,"bytes":N},"adapters":N}}, "prepared":[XID], "cleanupLines":[..]}
 * REL is the store directory relative to DATA_DIR ("mKahaDB/#210"); writes are the records the actions
 * appended to that store's journal (each record's size as the journal's Location says); adapters how many
 * KahaDB adapters the broker had open on it. Restarted in mode perdest, 5.17.2 opens two on the store of a
 * filter with a destination (ORDERS.&gt;, EVENTS.&gt;): the filter's, and a per-destination one that the
 * catch-all registers from the directory's name (findAndRegisterExistingAdapters). Both recover its prepared
 * transactions and both append to its journal, each from its own idea of the end: a commit writes the outcome
 * twice, at the same offset (the second overwrites the first), and their checkpoints overlap.
 */
public final class LayoutPlanCheck {
    private LayoutPlanCheck() {}

    /**
     * Every child adapter's KahaDB store with the directory (relative to data) it is on. In mode perdest a
     * restarted 5.17.2 broker opens two adapters on the directory of a filter with a destination (ORDERS.&gt;,
     * EVENTS.&gt;): the filter's, and a per-destination one the catch-all registers from the directory's name;
     * each destination is served by one of them, so the writes of an action are counted over both.
     */
    static List<Map.Entry<String, KahaDBPersistenceAdapter>> children(File data, MultiKahaDBPersistenceAdapter m) {
        List<Map.Entry<String, KahaDBPersistenceAdapter>> out = new ArrayList<>();
        String root = data.getAbsoluteFile().toPath().normalize().toString();
        for (PersistenceAdapter p : m.getAdapters()) {
            if (!(p instanceof KahaDBPersistenceAdapter)) continue;
            KahaDBPersistenceAdapter k = (KahaDBPersistenceAdapter) p;
            String dir = k.getDirectory().getAbsoluteFile().toPath().normalize().toString();
            String rel = dir.startsWith(root + "/") ? dir.substring(root.length() + 1) : dir;
            out.add(new java.util.AbstractMap.SimpleEntry<>(rel, k));
        }
        return out;
    }

    /** The last append location of every child adapter (children's order). */
    static List<Location> lasts(List<Map.Entry<String, KahaDBPersistenceAdapter>> ch) throws java.io.IOException {
        List<Location> out = new ArrayList<>();
        for (Map.Entry<String, KahaDBPersistenceAdapter> e : ch) out.add(last(e.getValue()));
        return out;
    }

    /** Counts one record (its size as the journal's Location says) for every adapter whose journal moved. */
    static void count(List<Map.Entry<String, KahaDBPersistenceAdapter>> ch, List<Location> before, Map<String, long[]> writes) throws java.io.IOException {
        for (int i = 0; i < ch.size(); i++) {
            Location l = last(ch.get(i).getValue());
            if (moved(i < before.size() ? before.get(i) : null, l)) {
                long[] w = writes.computeIfAbsent(ch.get(i).getKey(), k -> new long[2]);
                w[0]++;
                w[1] += l.getSize();
            }
        }
    }

    static Location last(KahaDBPersistenceAdapter k) throws java.io.IOException {
        return k.getStore().getJournal().getLastAppendLocation();
    }

    static boolean moved(Location before, Location after) {
        return after != null && (before == null || after.compareTo(before) != 0);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5 || !args[2].equals("--mode")) {
            System.err.println("usage: LayoutPlanCheck DATA_DIR OUT.json --mode filtered|perdest ACTION ARGS...");
            System.exit(2);
        }
        File data = new File(args[0]);
        File out = new File(args[1]);
        boolean perDest = MultiStore.mode(args[3]);
        Logs.setup(null, false);

        Map<String, Object> before = MultiStore.storeFiles(data);
        BrokerService b = LayoutWorkload.broker(data, "mkahadb", perDest, new LayoutWorkload.Knobs(), true);
        Map<String, long[]> writes = new TreeMap<>(); // REL -> {records, bytes}
        List<String> preparedNames = new ArrayList<>();
        Map<String, Integer> adapters = new TreeMap<>(); // REL -> adapters open on it
        b.start();
        b.waitUntilStarted();
        try {
            MultiKahaDBPersistenceAdapter m = (MultiKahaDBPersistenceAdapter) b.getPersistenceAdapter();
            TransactionStore txs = m.createTransactionStore();
            List<XATransactionId> prepared = new ArrayList<>();
            txs.recover(new TransactionRecoveryListener() {
                @Override
                public void recover(XATransactionId xid, Message[] added, MessageAck[] acks) {
                    // a transaction spanning stores is reported once per store
                    if (!prepared.contains(xid)) prepared.add(xid);
                }
            });
            for (XATransactionId x : prepared) preparedNames.add(x.toString());
            java.util.Collections.sort(preparedNames);
            ConnectionContext ctx = new ConnectionContext();
            for (int i = 4; i < args.length; ) {
                String action = args[i];
                int arity = action.equals("none") ? 0 : action.equals("delete-subscription") ? 3 : 1;
                if (i + 1 + arity > args.length) throw new IllegalArgumentException(action + " needs " + arity + " argument(s)");
                String[] x = java.util.Arrays.copyOfRange(args, i + 1, i + 1 + arity);
                i += 1 + arity;
                doAction(data, m, txs, prepared, ctx, action, x, writes);
            }
            for (Map.Entry<String, KahaDBPersistenceAdapter> e : children(data, m)) adapters.merge(e.getKey(), 1, Integer::sum);
            Thread.sleep(1500); // the transaction store's periodic cleanup
        } finally {
            b.stop();
            b.waitUntilStopped();
        }
        Logs.flush();
        Map<String, Object> after = MultiStore.storeFiles(data);
        Map<String, Object> stores = new TreeMap<>();
        java.util.Set<String> rels = new java.util.TreeSet<>(before.keySet());
        rels.addAll(after.keySet());
        for (String rel : rels) {
            @SuppressWarnings("unchecked") List<Integer> bf = (List<Integer>) before.getOrDefault(rel, new ArrayList<Integer>());
            @SuppressWarnings("unchecked") List<Integer> af = (List<Integer>) after.getOrDefault(rel, new ArrayList<Integer>());
            List<Integer> del = new ArrayList<>(bf);
            del.removeAll(af);
            List<Integer> created = new ArrayList<>(af);
            created.removeAll(bf);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("filesBefore", bf);
            e.put("filesAfter", af);
            e.put("deleted", del);
            e.put("created", created);
            long[] w = writes.getOrDefault(rel, new long[2]);
            Map<String, Object> wm = new LinkedHashMap<>();
            wm.put("records", w[0]);
            wm.put("bytes", w[1]);
            e.put("writes", wm);
            e.put("adapters", adapters.getOrDefault(rel, 0));
            stores.put(rel, e);
        }
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("stores", stores);
        res.put("prepared", preparedNames);
        res.put("cleanupLines", Logs.cleanupLines());
        Files.write(out.toPath(), Json.write(res).getBytes(StandardCharsets.UTF_8));
        System.out.println("LayoutPlanCheck: wrote " + out);
        System.exit(0);
    }

    static void doAction(File data, MultiKahaDBPersistenceAdapter m, TransactionStore txs, List<XATransactionId> prepared,
                         ConnectionContext ctx, String action, String[] x, Map<String, long[]> writes) throws Exception {
        List<Map.Entry<String, KahaDBPersistenceAdapter>> ch = children(data, m);
        List<Location> start = lasts(ch);
        switch (action) {
            case "none":
                return;
            case "purge": {
                ActiveMQDestination d = ActiveMQDestination.createDestination(x[0], ActiveMQDestination.QUEUE_TYPE);
                MessageStore ms = m.createQueueMessageStore((ActiveMQQueue) d);
                ms.start();
                PlanCheck.Collector c = new PlanCheck.Collector();
                ms.recover(c);
                // the store that holds d: the one whose journal the first ack moves
                for (MessageId id : c.ids) {
                    MessageAck ack = new MessageAck();
                    ack.setAckType(MessageAck.STANDARD_ACK_TYPE);
                    ack.setDestination(d);
                    ack.setMessageID(id);
                    ack.setResponseRequired(true); // synchronous: the last append is this record's (see PlanCheck)
                    List<Location> pre = lasts(ch);
                    ms.removeMessage(ctx, ack);
                    count(ch, pre, writes);
                }
                return;
            }
            case "delete-subscription":
                PlanCheck.deleteSubscription(m, x);
                break;
            case "commit":
            case "rollback":
                PlanCheck.decide(txs, prepared, action, x[0]);
                break;
            default:
                throw new IllegalArgumentException("unknown action " + action);
        }
        // one record a store whose journal moved (a commit or rollback: one outcome record in each store the
        // transaction spans; a subscription deletion: one record); an adapter the action opened is new
        count(children(data, m), start, writes);
    }
}
