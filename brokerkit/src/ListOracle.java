import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Iterator;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.apache.activemq.store.kahadb.disk.index.ListIndex;
import org.apache.activemq.store.kahadb.disk.index.ListNode;
import org.apache.activemq.store.kahadb.disk.page.PageFile;
import org.apache.activemq.store.kahadb.disk.page.Transaction;
import org.apache.activemq.store.kahadb.disk.util.LinkedNode;
import org.apache.activemq.store.kahadb.disk.util.Sequence;
import org.apache.activemq.store.kahadb.disk.util.SequenceSet;
import org.apache.activemq.store.kahadb.disk.util.StringMarshaller;

/**
 * The node structure of a topic's ack-positions list (StoredDestination.ackPositions) after a sequence of
 * operations, built by the real code: a ListIndex&lt;String, SequenceSet&gt; on a real PageFile (in a temporary
 * directory, default page size 4096) with the broker's marshallers (StringMarshaller, SequenceSet.Marshaller),
 * created as MessageDatabase does (tx.allocate for the head page, ListIndex.load) and changed as MessageDatabase's
 * callers change it, each operation in its own pageFile.tx().execute. The oracle of refgraph's ackList
 * (refgraph/acklist_oracle_test.go).
 *
 * Usage: ListOracle, operations on standard input, one a line (KEY without spaces; SET is "-" for an empty set, else
 * ranges "a-b" or "a" joined by commas, ascending):
 *   add KEY SET     addAckLocationForNewMessage: get, then add when null, else put
 *   put KEY SET     addAckLocationForRetroactiveSub: put
 *   ack KEY SET     removeAckLocation: get, then put when SET is not empty, else remove (after the get)
 *   rm KEY          removeAckLocationsForSub: remove when the list is not empty
 *   reload          a restart: a new ListIndex on the same head page, loaded
 *   dump            one line of JSON: {"nodes":[["KEY SET",...],...],"tail":ORDINAL} (tail -1: not in the chain)
 *   end (or end of input)    stops
 * Errors go to standard error and exit 1.
 */
public final class ListOracle {
    private ListOracle() {}

    private static PageFile pageFile;
    private static ListIndex<String, SequenceSet> list;
    private static long head;

    public static void main(String[] args) throws Exception {
        Logger root = Logger.getLogger("");
        root.setLevel(Level.WARNING);
        for (Handler h : root.getHandlers()) {
            h.setLevel(Level.WARNING);
        }
        File dir = Files.createTempDirectory("listoracle").toFile();
        int rc = 0;
        try {
            pageFile = new PageFile(dir, "db");
            pageFile.setEnableDiskSyncs(false);
            pageFile.setPageCacheSize(10000);
            pageFile.load();
            // as MessageDatabase creates it: the head page allocated and the list loaded in one transaction
            pageFile.tx().execute(new Transaction.Closure<IOException>() {
                public void execute(Transaction tx) throws IOException {
                    head = tx.allocate().getPageId();
                    load(tx);
                }
            });
            rc = run();
        } finally {
            try {
                pageFile.unload();
            } catch (Exception e) {
                // best effort
            }
            deleteTree(dir);
        }
        System.exit(rc);
    }

    private static void load() throws IOException {
        pageFile.tx().execute(new Transaction.Closure<IOException>() {
            public void execute(Transaction tx) throws IOException {
                load(tx);
            }
        });
    }

    private static void load(Transaction tx) throws IOException {
        list = new ListIndex<String, SequenceSet>(pageFile, head);
        list.setKeyMarshaller(StringMarshaller.INSTANCE);
        list.setValueMarshaller(SequenceSet.Marshaller.INSTANCE);
        list.load(tx);
    }

    private static SequenceSet set(String s) {
        SequenceSet v = new SequenceSet();
        if (s.equals("-")) {
            return v;
        }
        for (String r : s.split(",")) {
            int i = r.indexOf('-');
            if (i < 0) {
                v.add(new Sequence(Long.parseLong(r)));
            } else {
                v.add(new Sequence(Long.parseLong(r.substring(0, i)), Long.parseLong(r.substring(i + 1))));
            }
        }
        return v;
    }

    private static String text(SequenceSet v) {
        if (v.isEmpty()) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (Sequence q = v.getHead(); q != null; q = q.getNext()) {
            if (sb.length() > 0) {
                sb.append(',');
            }
            sb.append(q.getFirst());
            if (q.getLast() != q.getFirst()) {
                sb.append('-').append(q.getLast());
            }
        }
        return sb.toString();
    }

    private static int run() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        int lineNo = 0;
        String line;
        while ((line = in.readLine()) != null) {
            lineNo++;
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            final String[] f = line.split("\\s+");
            switch (f[0]) {
            case "add":
            case "put":
            case "ack":
            case "rm":
                if (f.length < (f[0].equals("rm") ? 2 : 3)) {
                    System.err.println("ListOracle: line " + lineNo + ": " + line);
                    return 1;
                }
                pageFile.tx().execute(new Transaction.Closure<IOException>() {
                    public void execute(Transaction tx) throws IOException {
                        apply(tx, f);
                    }
                });
                break;
            case "reload":
                load();
                break;
            case "dump":
                out.write(dump());
                out.write('\n');
                out.flush();
                break;
            case "end":
                out.flush();
                return 0;
            default:
                System.err.println("ListOracle: line " + lineNo + ": unknown operation: " + line);
                return 1;
            }
        }
        out.flush();
        return 0;
    }

    private static void apply(Transaction tx, String[] f) throws IOException {
        String key = f[1];
        switch (f[0]) {
        case "add": {
            SequenceSet cur = list.get(tx, key);
            if (cur == null) {
                list.add(tx, key, set(f[2]));
            } else {
                list.put(tx, key, set(f[2]));
            }
            break;
        }
        case "put":
            list.put(tx, key, set(f[2]));
            break;
        case "ack": {
            SequenceSet cur = list.get(tx, key);
            if (cur == null) {
                throw new IOException("ack of " + key + ": no entry");
            }
            SequenceSet v = set(f[2]);
            if (!v.isEmpty()) {
                list.put(tx, key, v);
            } else {
                list.remove(tx, key);
            }
            break;
        }
        default:
            if (!list.isEmpty(tx)) {
                list.remove(tx, key);
            }
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static String dump() throws IOException {
        final StringBuilder sb = new StringBuilder("{\"nodes\":[");
        pageFile.tx().execute(new Transaction.Closure<IOException>() {
            public void execute(Transaction tx) throws IOException {
                int i = 0, tail = -1;
                for (Iterator<ListNode<String, SequenceSet>> it = list.listNodeIterator(tx); it.hasNext(); i++) {
                    if (i > 5000) {
                        throw new IOException("the list's chain does not end");
                    }
                    ListNode<String, SequenceSet> n = it.next();
                    if (n.getPageId() == list.getTailPageId()) {
                        tail = i;
                    }
                    if (i > 0) {
                        sb.append(',');
                    }
                    sb.append('[');
                    boolean first = true;
                    for (LinkedNode e = (LinkedNode) n.getFirst(tx); e != null; e = e.getNext()) {
                        Map.Entry<String, SequenceSet> kv = (Map.Entry<String, SequenceSet>) e;
                        if (!first) {
                            sb.append(',');
                        }
                        first = false;
                        sb.append('"').append(kv.getKey()).append(' ').append(text(kv.getValue())).append('"');
                    }
                    sb.append(']');
                }
                sb.append("],\"tail\":").append(tail).append('}');
            }
        });
        return sb.toString();
    }

    private static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteTree(c);
            }
        }
        f.delete();
    }
}
