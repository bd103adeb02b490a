import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.apache.activemq.store.kahadb.KahaDBStore;
import org.apache.activemq.store.kahadb.MessageDatabase;
import org.apache.activemq.store.kahadb.disk.index.BTreeIndex;
import org.apache.activemq.store.kahadb.disk.journal.Location;
import org.apache.activemq.store.kahadb.disk.page.PageFile;
import org.apache.activemq.store.kahadb.disk.page.Transaction;
import org.apache.activemq.store.kahadb.disk.util.LongMarshaller;
import org.apache.activemq.store.kahadb.disk.util.Marshaller;

/**
 * The shape of a destination's location index (StoredDestination.locationIndex) after a sequence of puts and
 * removes, built by the real code: a BTreeIndex&lt;Location, Long&gt; on a real PageFile (in a temporary directory,
 * default page size 4096) with the broker's own key marshaller (MessageDatabase.LocationSizeMarshaller: file,
 * offset, size) and LongMarshaller values, created and changed as MessageDatabase does (tx.allocate for the root
 * page, BTreeIndex.load, put and remove inside pageFile.tx().execute). The oracle of refgraph's locTree
 * (refgraph/loctree_oracle_test.go).
 *
 * Usage: BTreeOracle, operations on standard input, one a line:
 *   put FILE OFFSET [SIZE]   BTreeIndex.put(Location(FILE, OFFSET, SIZE default 0), a running sequence)
 *   del FILE OFFSET          BTreeIndex.remove(Location(FILE, OFFSET))
 *   begin ... commit         the operations between them in one transaction (else each in its own)
 *   dump                     prints the tree's shape, one line of JSON: a branch is
 *                            {"keys":[[file,offset],...],"children":[...]}, a leaf {"n":COUNT,"keys":[...]}
 *   end (or end of input)    stops
 * Nodes are read with the index's own loadNode (package-private, by reflection) in a fresh transaction.
 * Errors go to standard error and exit 1.
 */
public final class BTreeOracle {
    private BTreeOracle() {}

    private static PageFile pageFile;
    private static BTreeIndex<Location, Long> index;
    private static Method loadNode;
    private static Field keysField;
    private static Field childrenField;
    private static long seq;

    public static void main(String[] args) throws Exception {
        Logger root = Logger.getLogger("");
        root.setLevel(Level.WARNING);
        for (Handler h : root.getHandlers()) {
            h.setLevel(Level.WARNING);
        }
        File dir = Files.createTempDirectory("btreeoracle").toFile();
        int rc = 0;
        try {
            open(dir);
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

    @SuppressWarnings("unchecked")
    private static void open(File dir) throws Exception {
        pageFile = new PageFile(dir, "db");
        // as MessageDatabase.createPageFile (defaults), without the disk syncs nobody waits for here
        pageFile.setEnableDiskSyncs(false);
        pageFile.setPageCacheSize(10000);
        pageFile.load();

        // the broker's own key marshaller: MessageDatabase.LocationSizeMarshaller is an inner class
        Class<?> lsm = Class.forName("org.apache.activemq.store.kahadb.MessageDatabase$LocationSizeMarshaller");
        Constructor<?> c = lsm.getDeclaredConstructor(MessageDatabase.class);
        c.setAccessible(true);
        final Marshaller<Location> keyMarshaller = (Marshaller<Location>) c.newInstance(new KahaDBStore());

        pageFile.tx().execute(new Transaction.Closure<IOException>() {
            public void execute(Transaction tx) throws IOException {
                index = new BTreeIndex<Location, Long>(pageFile, tx.allocate());
                index.setKeyMarshaller(keyMarshaller);
                index.setValueMarshaller(LongMarshaller.INSTANCE);
                index.load(tx);
            }
        });

        loadNode = BTreeIndex.class.getDeclaredMethod("loadNode", Transaction.class, long.class,
                Class.forName("org.apache.activemq.store.kahadb.disk.index.BTreeNode"));
        loadNode.setAccessible(true);
        Class<?> node = Class.forName("org.apache.activemq.store.kahadb.disk.index.BTreeNode");
        keysField = node.getDeclaredField("keys");
        keysField.setAccessible(true);
        childrenField = node.getDeclaredField("children");
        childrenField.setAccessible(true);
    }

    private static int run() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        final List<String[]> batch = new ArrayList<>();
        boolean inTx = false;
        int lineNo = 0;
        String line;
        while ((line = in.readLine()) != null) {
            lineNo++;
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\\s+");
            switch (f[0]) {
            case "put":
            case "del":
                if (f.length < 3) {
                    System.err.println("BTreeOracle: line " + lineNo + ": " + line);
                    return 1;
                }
                batch.add(f);
                if (!inTx) {
                    apply(batch);
                }
                break;
            case "begin":
                inTx = true;
                break;
            case "commit":
                inTx = false;
                apply(batch);
                break;
            case "dump":
                if (inTx) {
                    System.err.println("BTreeOracle: line " + lineNo + ": dump inside a transaction");
                    return 1;
                }
                out.write(dump());
                out.write('\n');
                out.flush();
                break;
            case "end":
                out.flush();
                return 0;
            default:
                System.err.println("BTreeOracle: line " + lineNo + ": unknown operation: " + line);
                return 1;
            }
        }
        out.flush();
        return 0;
    }

    /** Applies the batched operations in one transaction, as MessageDatabase applies a command's updates. */
    private static void apply(final List<String[]> batch) throws IOException {
        if (batch.isEmpty()) {
            return;
        }
        pageFile.tx().execute(new Transaction.Closure<IOException>() {
            public void execute(Transaction tx) throws IOException {
                for (String[] f : batch) {
                    int file = Integer.parseInt(f[1]);
                    int offset = Integer.parseInt(f[2]);
                    int size = f.length > 3 ? Integer.parseInt(f[3]) : 0;
                    Location l = new Location(file, offset);
                    l.setSize(size);
                    if (f[0].equals("put")) {
                        index.put(tx, l, seq++);
                    } else {
                        index.remove(tx, l);
                    }
                }
            }
        });
        batch.clear();
    }

    private static String dump() throws IOException {
        final StringBuilder sb = new StringBuilder();
        pageFile.tx().execute(new Transaction.Closure<IOException>() {
            public void execute(Transaction tx) throws IOException {
                try {
                    Object root = loadNode.invoke(index, tx, index.getPageId(), null);
                    write(sb, tx, root, 0);
                } catch (ReflectiveOperationException e) {
                    throw new IOException(e);
                }
            }
        });
        return sb.toString();
    }

    private static void write(StringBuilder sb, Transaction tx, Object node, int depth)
            throws IOException, ReflectiveOperationException {
        if (depth > 64) {
            throw new IOException("tree deeper than 64 levels: a cycle?");
        }
        Object[] keys = (Object[]) keysField.get(node);
        long[] children = (long[]) childrenField.get(node);
        if (children == null) {
            sb.append("{\"n\":").append(keys.length).append(",\"keys\":");
            writeKeys(sb, keys);
            sb.append('}');
            return;
        }
        sb.append("{\"keys\":");
        writeKeys(sb, keys);
        sb.append(",\"children\":[");
        for (int i = 0; i < children.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            write(sb, tx, loadNode.invoke(index, tx, children[i], node), depth + 1);
        }
        sb.append("]}");
    }

    private static void writeKeys(StringBuilder sb, Object[] keys) {
        sb.append('[');
        for (int i = 0; i < keys.length; i++) {
            Location l = (Location) keys[i];
            if (i > 0) {
                sb.append(',');
            }
            sb.append('[').append(l.getDataFileId()).append(',').append(l.getOffset()).append(']');
        }
        sb.append(']');
    }

    private static void deleteTree(File f) {
        File[] kids = f.listFiles();
        if (kids != null) {
            for (File k : kids) {
                deleteTree(k);
            }
        }
        f.delete();
    }
}
