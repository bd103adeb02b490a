import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.activemq.store.MessageStoreStatistics;
import org.apache.activemq.store.kahadb.KahaDBStore;
import org.apache.activemq.store.kahadb.MessageDatabase;
import org.apache.activemq.store.kahadb.data.KahaSubscriptionCommand;
import org.apache.activemq.store.kahadb.disk.index.BTreeIndex;
import org.apache.activemq.store.kahadb.disk.index.ListIndex;
import org.apache.activemq.store.kahadb.disk.journal.Location;
import org.apache.activemq.store.kahadb.disk.page.PageFile;
import org.apache.activemq.store.kahadb.disk.page.Transaction;
import org.apache.activemq.store.kahadb.disk.util.Sequence;
import org.apache.activemq.store.kahadb.disk.util.SequenceSet;
import org.apache.activemq.util.RecoverableRandomAccessFile;

/**
 * Dumps a KahaDB index (db.data, after the page file's own db.redo recovery) as a 5.17.2 broker loads it, with
 * the real classes and nothing else: on a temporary copy of db.data, db.redo and db.free (never the journal), a
 * KahaDBStore is created and only its private MessageDatabase.loadPageFile() is invoked (reflection): PageFile.load
 * (header, redo recovery), the metadata page, the destinations B-tree and loadStoredDestination for every
 * destination (order index + configureLast, subscription indexes, statistics). No broker is started, the journal
 * is never opened, nothing is replayed. The state is then read through the broker's own iterators:
 * MessageOrderIndex.iterator (the order in which the broker recovers messages; the priority class taken from the
 * iterator's current sub-iterator), BTreeIndex.iterator for the message-id, location, subscription and last-ack
 * indexes, ListIndex.iterator for ack positions and subscription locations, StoredMessageStoreStatistics.get.
 * The page file header is read with PageFile.loadMetaData on a separate PageFile before the load. Destinations are
 * listed in the destinations B-tree's iteration order, each key once (the broker keeps them in a map).
 *
 * Usage: IndexDump STORE_DIR OUT.json [STORE_DIR OUT.json ...]
 *
 * Output: {"timeout":true,"loops":true|false,"cpuMs":N,"wallMs":N,"stack":[...]} when the broker's code did not finish
 *         (loops: it spent INDEXDUMP_CPU_MS of CPU time on the index and was still in the index code, which only a
 *         loop on page links that form a cycle does; without loops the wall-clock limit came first: no verdict), else
 *         {"header":{...}|null, "error":"..." (load failed: the broker would rebuild the index), "pageCount":N,
 *          "iterationError":"..." (listing the destinations failed after the load),
 *          "metadata":{...}, "destinations":[{"key","topic","nextMessageId","messages":[{seq,id,file,offset,size,
 *          class}], "messageIds":[{id,seq}], "locations":[{file,offset,size,seq}], "subscriptions":[{key,command
 *          (hex of the unframed protobuf)}], "lastAcks":[{key,seq,priority}], "ackPositions":[{key,ranges:[[f,l]]}],
 *          "subLocations":[{key,file,offset}], "stats":{count,totalSize,maxSize,minSize,sizeCount}|null} or {"key","error"} when reading the destination
 *          failed after the load (damage the broker only meets when it uses the destination)]}
 */
public final class IndexDump {
    private IndexDump() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length % 2 != 0) {
            System.err.println("usage: IndexDump STORE_DIR OUT.json [STORE_DIR OUT.json ...]");
            System.exit(2);
        }
        Logs.setup(null);
        for (int i = 0; i < args.length; i += 2) {
            Map<String, Object> m = dumpWithTimeout(new File(args[i]));
            Files.write(new File(args[i + 1]).toPath(), Json.write(m).getBytes(StandardCharsets.UTF_8));
            System.out.println("IndexDump: " + args[i] + " -> " + args[i + 1]);
        }
        System.exit(0);
    }

    /**
     * A damaged index can make the broker's code loop forever (page links that form a cycle). What says it loops is
     * the work it does, not the time it takes (a loaded machine is slow): the dump is stopped once its thread has
     * used INDEXDUMP_CPU_MS (default 10000) of CPU time, far more than any index of a few pages needs, and is
     * reported as {"timeout": true, "loops": true} with the thread's stack at that moment. A dump that reaches the
     * wall-clock limit INDEXDUMP_TIMEOUT_MS (default 120000) first is stopped too, but "loops" is false: the test
     * cannot tell what the broker does there.
     */
    @SuppressWarnings("deprecation")
    static Map<String, Object> dumpWithTimeout(File store) throws Exception {
        long wallLimit = Long.parseLong(System.getenv().getOrDefault("INDEXDUMP_TIMEOUT_MS", "120000"));
        long cpuLimit = Long.parseLong(System.getenv().getOrDefault("INDEXDUMP_CPU_MS", "10000"));
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        if (!mx.isThreadCpuTimeSupported()) throw new IllegalStateException("no thread CPU time in this JVM");
        mx.setThreadCpuTimeEnabled(true);
        Map<String, Object>[] result = new Map[1];
        Throwable[] failure = new Throwable[1];
        Thread t = new Thread(() -> {
            try {
                result[0] = dump(store);
            } catch (Throwable e) {
                failure[0] = e;
            }
        }, "indexdump");
        t.setDaemon(true);
        long start = System.nanoTime();
        t.start();
        while (true) {
            t.join(20);
            if (!t.isAlive()) break;
            long cpuMs = Math.max(0, mx.getThreadCpuTime(t.getId())) / 1_000_000;
            long wallMs = (System.nanoTime() - start) / 1_000_000;
            if (cpuMs < cpuLimit && wallMs < wallLimit) continue;
            StackTraceElement[] stack = t.getStackTrace();
            t.stop(); // Java 17: still stops a thread that loops without blocking
            List<String> frames = new ArrayList<>();
            boolean inIndex = false;
            for (StackTraceElement e : stack) {
                frames.add(e.toString());
                inIndex |= e.getClassName().startsWith("org.apache.activemq.store.kahadb.");
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("timeout", true);
            m.put("loops", cpuMs >= cpuLimit && inIndex);
            m.put("cpuMs", cpuMs);
            m.put("wallMs", wallMs);
            m.put("stack", frames);
            return m;
        }
        if (failure[0] != null) {
            if (failure[0] instanceof Exception) throw (Exception) failure[0];
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("error", String.valueOf(failure[0]));
            return m;
        }
        return result[0];
    }

    static Map<String, Object> dump(File store) throws Exception {
        File tmp = Files.createTempDirectory("brokerkit-indexdump").toFile();
        try {
            for (String n : new String[] {"db.data", "db.redo", "db.free"}) {
                File f = new File(store, n);
                if (f.isFile()) Files.copy(f.toPath(), new File(tmp, n).toPath(), StandardCopyOption.COPY_ATTRIBUTES);
            }
            return load(tmp);
        } finally {
            File[] fs = tmp.listFiles();
            if (fs != null) for (File f : fs) f.delete();
            tmp.delete();
        }
    }

    static Map<String, Object> load(File dir) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("header", header(dir));
        KahaDBStore db = new KahaDBStore();
        db.setDirectory(dir);
        Method loadPageFile = MessageDatabase.class.getDeclaredMethod("loadPageFile");
        loadPageFile.setAccessible(true);
        try {
            loadPageFile.invoke(db);
        } catch (InvocationTargetException e) {
            out.put("error", String.valueOf(e.getCause()));
            return out;
        }
        PageFile pf = (PageFile) get(db, "pageFile");
        out.put("pageCount", pf.getPageCount());
        Object md = get(db, "metadata");
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("state", get(md, "state"));
        meta.put("destinationsPage", ((BTreeIndex<?, ?>) get(md, "destinations")).getPageId());
        meta.put("lastUpdate", loc((Location) get(md, "lastUpdate")));
        meta.put("firstInProgressTx", loc((Location) get(md, "firstInProgressTransactionLocation")));
        meta.put("producerAudit", loc((Location) get(md, "producerSequenceIdTrackerLocation")));
        meta.put("version", get(md, "version"));
        meta.put("ackMap", loc((Location) get(md, "ackMessageFileMapLocation")));
        meta.put("openwireVersion", get(md, "openwireVersion"));
        out.put("metadata", meta);

        @SuppressWarnings("unchecked")
        BTreeIndex<String, Object> dests = (BTreeIndex<String, Object>) get(md, "destinations");
        @SuppressWarnings("unchecked")
        Map<String, Object> stored = (Map<String, Object>) get(db, "storedDestinations");
        List<Object> list = new ArrayList<>();
        out.put("destinations", list);
        try {
            pf.tx().execute((Transaction.Closure<Exception>) tx -> {
                java.util.Set<String> seen = new java.util.HashSet<>();
                for (Iterator<Map.Entry<String, Object>> it = dests.iterator(tx); it.hasNext();) {
                    String key = it.next().getKey();
                    // storedDestinations is a map: a key the B-tree lists twice is one destination (the last loaded)
                    if (!seen.add(key)) continue;
                    try {
                        list.add(destination(tx, key, stored.get(key)));
                    } catch (Throwable t) {
                        // damage the broker only meets when it uses the destination
                        Map<String, Object> d = new LinkedHashMap<>();
                        d.put("key", key);
                        d.put("error", String.valueOf(t instanceof InvocationTargetException ? t.getCause() : t));
                        list.add(d);
                    }
                }
            });
        } catch (Throwable t) {
            out.put("iterationError", String.valueOf(t));
        }
        return out;
    }

    /** PageFile.loadMetaData on a PageFile of its own, before the real load (which rewrites the header). */
    static Map<String, Object> header(File dir) throws Exception {
        File data = new File(dir, "db.data");
        if (!data.isFile() || data.length() == 0) return null;
        PageFile hp = new PageFile(dir, "db");
        RecoverableRandomAccessFile raf = new RecoverableRandomAccessFile(data, "r");
        try {
            set(hp, "readFile", raf);
            Method lm = PageFile.class.getDeclaredMethod("loadMetaData");
            lm.setAccessible(true);
            try {
                lm.invoke(hp);
            } catch (InvocationTargetException e) {
                return null;
            }
            PageFile.MetaData m = (PageFile.MetaData) get(hp, "metaData");
            if (m == null) return null;
            Map<String, Object> h = new LinkedHashMap<>();
            h.put("pageSize", m.getPageSize());
            h.put("cleanShutdown", m.isCleanShutdown());
            h.put("lastTxId", m.getLastTxId());
            h.put("freePages", m.getFreePages());
            h.put("metaDataTxId", m.getMetaDataTxId());
            return h;
        } finally {
            raf.close();
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> destination(Transaction tx, String key, Object sd) throws Exception {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("key", key);
        Object orderIndex = get(sd, "orderIndex");
        d.put("nextMessageId", get(orderIndex, "nextMessageId"));
        BTreeIndex<String, Object> subscriptions = (BTreeIndex<String, Object>) get(sd, "subscriptions");
        d.put("topic", subscriptions != null);

        List<Object> messages = new ArrayList<>();
        Method it = orderIndex.getClass().getDeclaredMethod("iterator", Transaction.class);
        it.setAccessible(true);
        Iterator<Map.Entry<Long, Object>> oi = (Iterator<Map.Entry<Long, Object>>) it.invoke(orderIndex, tx);
        while (oi.hasNext()) {
            Object cur = get(oi, "currentIterator");
            String cls = cur == get(oi, "highIterator") ? "HI" : cur == get(oi, "defaultIterator") ? "DEF" : "LO";
            Map.Entry<Long, Object> e = oi.next();
            Object keys = MESSAGE_KEYS.cast(e.getValue()); // the casts the broker makes when it uses an entry
            Location l = (Location) get(keys, "location");
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("seq", (Long) e.getKey());
            m.put("id", (String) get(keys, "messageId"));
            m.put("file", l.getDataFileId());
            m.put("offset", l.getOffset());
            m.put("size", l.getSize());
            m.put("class", cls);
            messages.add(m);
        }
        d.put("messages", messages);

        List<Object> ids = new ArrayList<>();
        for (Iterator<Map.Entry<String, Long>> i = ((BTreeIndex<String, Long>) get(sd, "messageIdIndex")).iterator(tx); i.hasNext();) {
            Map.Entry<String, Long> e = i.next();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", (String) e.getKey());
            m.put("seq", (Long) e.getValue());
            ids.add(m);
        }
        d.put("messageIds", ids);

        List<Object> locs = new ArrayList<>();
        for (Iterator<Map.Entry<Location, Long>> i = ((BTreeIndex<Location, Long>) get(sd, "locationIndex")).iterator(tx); i.hasNext();) {
            Map.Entry<Location, Long> e = i.next();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("file", e.getKey().getDataFileId());
            m.put("offset", e.getKey().getOffset());
            m.put("size", e.getKey().getSize());
            m.put("seq", (Long) e.getValue());
            locs.add(m);
        }
        d.put("locations", locs);

        if (subscriptions != null) {
            List<Object> subs = new ArrayList<>();
            for (Iterator<Map.Entry<String, Object>> i = subscriptions.iterator(tx); i.hasNext();) {
                Map.Entry<String, Object> e = i.next();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("key", (String) e.getKey());
                m.put("command", hex(((KahaSubscriptionCommand) e.getValue()).toUnframedByteArray()));
                subs.add(m);
            }
            d.put("subscriptions", subs);

            List<Object> acks = new ArrayList<>();
            for (Iterator<Map.Entry<String, Object>> i = ((BTreeIndex<String, Object>) get(sd, "subscriptionAcks")).iterator(tx); i.hasNext();) {
                Map.Entry<String, Object> e = i.next();
                Object ack = LAST_ACK.cast(e.getValue());
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("key", (String) e.getKey());
                m.put("seq", get(ack, "lastAckedSequence"));
                m.put("priority", ((Byte) get(ack, "priority")).intValue());
                acks.add(m);
            }
            d.put("lastAcks", acks);

            List<Object> positions = new ArrayList<>();
            for (Iterator<Map.Entry<String, SequenceSet>> i = ((ListIndex<String, SequenceSet>) get(sd, "ackPositions")).iterator(tx); i.hasNext();) {
                Map.Entry<String, SequenceSet> e = i.next();
                List<Object> ranges = new ArrayList<>();
                for (Sequence s = e.getValue().getHead(); s != null; s = s.getNext()) {
                    ranges.add(new long[] {s.getFirst(), s.getLast()});
                }
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("key", (String) e.getKey());
                m.put("ranges", ranges);
                positions.add(m);
            }
            d.put("ackPositions", positions);

            List<Object> subLocs = new ArrayList<>();
            for (Iterator<Map.Entry<String, Location>> i = ((ListIndex<String, Location>) get(sd, "subLocations")).iterator(tx); i.hasNext();) {
                Map.Entry<String, Location> e = i.next();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("key", (String) e.getKey());
                m.put("file", e.getValue().getDataFileId());
                m.put("offset", e.getValue().getOffset());
                subLocs.add(m);
            }
            d.put("subLocations", subLocs);
        }

        Object sms = get(sd, "messageStoreStatistics");
        Method get = sms.getClass().getDeclaredMethod("get", Transaction.class);
        get.setAccessible(true);
        MessageStoreStatistics st = (MessageStoreStatistics) get.invoke(sms, tx);
        if (st == null) {
            d.put("stats", null);
        } else {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("count", st.getMessageCount().getCount());
            m.put("totalSize", st.getMessageSize().getTotalSize());
            m.put("maxSize", st.getMessageSize().getMaxSize());
            m.put("minSize", st.getMessageSize().getMinSize());
            m.put("sizeCount", st.getMessageSize().getCount());
            d.put("stats", m);
        }
        return d;
    }

    static final Class<?> MESSAGE_KEYS = inner("MessageKeys");
    static final Class<?> LAST_ACK = inner("LastAck");

    static Class<?> inner(String name) {
        try {
            return Class.forName(MessageDatabase.class.getName() + "$" + name);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    static Object loc(Location l) {
        if (l == null) return null;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("file", l.getDataFileId());
        m.put("offset", l.getOffset());
        return m;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        return sb.toString();
    }

    static Field field(Class<?> c, String name) throws NoSuchFieldException {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // superclass
            }
        }
        throw new NoSuchFieldException(c.getName() + "." + name);
    }

    static Object get(Object o, String name) throws Exception {
        return field(o.getClass(), name).get(o);
    }

    static void set(Object o, String name, Object v) throws Exception {
        field(o.getClass(), name).set(o, v);
    }
}
