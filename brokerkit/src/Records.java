import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.activemq.command.ConnectionId;
import org.apache.activemq.command.LocalTransactionId;
import org.apache.activemq.command.XATransactionId;
import org.apache.activemq.store.kahadb.JournalCommand;
import org.apache.activemq.store.kahadb.data.KahaAddMessageCommand;
import org.apache.activemq.store.kahadb.data.KahaCommitCommand;
import org.apache.activemq.store.kahadb.data.KahaDestination;
import org.apache.activemq.store.kahadb.data.KahaEntryType;
import org.apache.activemq.store.kahadb.data.KahaPrepareCommand;
import org.apache.activemq.store.kahadb.data.KahaRemoveDestinationCommand;
import org.apache.activemq.store.kahadb.data.KahaRemoveMessageCommand;
import org.apache.activemq.store.kahadb.data.KahaRewrittenDataFileCommand;
import org.apache.activemq.store.kahadb.data.KahaRollbackCommand;
import org.apache.activemq.store.kahadb.data.KahaSubscriptionCommand;
import org.apache.activemq.store.kahadb.data.KahaTraceCommand;
import org.apache.activemq.store.kahadb.data.KahaTransactionInfo;
import org.apache.activemq.store.kahadb.data.KahaUpdateMessageCommand;
import org.apache.activemq.store.kahadb.disk.journal.Journal;
import org.apache.activemq.store.kahadb.disk.journal.Location;
import org.apache.activemq.util.ByteSequence;
import org.apache.activemq.util.DataByteArrayInputStream;

/**
 * Lists every user record of a KahaDB journal with ActiveMQ's own Journal classes
 * (Journal.getNextLocation / Journal.read, KahaEntryType + JournalCommand.mergeFramed, exactly as
 * MessageDatabase.load does). The journal files are copied to a temp directory first, so the store
 * passed in is never modified.
 *
 * Usage: Records STORE_DIR OUT.json [--max-file-length N]
 */
public final class Records {
    private Records() {}

    public static final class Result {
        public final List<Map<String, Object>> records = new ArrayList<>();
        public final Map<String, Integer> counts = new TreeMap<>();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Records STORE_DIR OUT.json [--max-file-length N]");
            System.exit(2);
        }
        File store = new File(args[0]);
        File out = new File(args[1]);
        int maxLen = -1;
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("--max-file-length") && i + 1 < args.length) maxLen = Integer.parseInt(args[++i]);
        }
        if (maxLen <= 0) maxLen = Inspect.maxFileLengthFromExpected(store);
        Logs.setup(null);
        Result r = scan(store, maxLen);
        Files.write(out.toPath(), toJson(r).getBytes(StandardCharsets.UTF_8));
        System.out.println("Records: " + r.records.size() + " records " + r.counts);
    }

    public static String toJson(Result r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("records", r.records);
        m.put("counts", r.counts);
        return Json.write(m);
    }

    /** Copies the db-*.log files of store into a temp dir and walks them with Journal. */
    public static Result scan(File store, int maxFileLength) throws IOException {
        File tmp = Files.createTempDirectory("brokerkit-records").toFile();
        try {
            File[] files = store.listFiles();
            if (files == null) throw new IOException("not a directory: " + store);
            for (File f : files) {
                String n = f.getName();
                if (f.isFile() && n.startsWith("db-") && n.endsWith(".log")) {
                    Files.copy(f.toPath(), new File(tmp, n).toPath(), StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
            return scanDir(tmp, maxFileLength);
        } finally {
            deleteTree(tmp);
        }
    }

    static Result scanDir(File dir, int maxFileLength) throws IOException {
        Journal journal = new Journal();
        journal.setDirectory(dir);
        if (maxFileLength > 0) journal.setMaxFileLength(maxFileLength);
        journal.setChecksum(true);
        journal.setCheckForCorruptionOnStartup(false);
        journal.setPreallocationScope(Journal.PreallocationScope.NONE);
        journal.start();
        Result r = new Result();
        try {
            Location loc = journal.getNextLocation(null);
            while (loc != null) {
                ByteSequence data = journal.read(loc);
                DataByteArrayInputStream is = new DataByteArrayInputStream(data);
                byte typeByte = is.readByte();
                KahaEntryType type = KahaEntryType.valueOf(typeByte);
                Map<String, Object> rec = new LinkedHashMap<>();
                rec.put("file", loc.getDataFileId());
                rec.put("offset", loc.getOffset());
                rec.put("size", loc.getSize());
                if (type == null) {
                    rec.put("type", "UNKNOWN_" + (typeByte & 0xff));
                } else {
                    rec.put("type", type.name());
                    JournalCommand<?> cmd = (JournalCommand<?>) type.createMessage();
                    cmd.mergeFramed(is);
                    describe(cmd, rec);
                }
                r.records.add(rec);
                r.counts.merge((String) rec.get("type"), 1, Integer::sum);
                loc = journal.getNextLocation(loc);
            }
        } finally {
            journal.close();
        }
        return r;
    }

    static String dest(KahaDestination d) {
        if (d == null) return null;
        String prefix;
        switch (d.getType()) {
            case QUEUE: prefix = "queue://"; break;
            case TOPIC: prefix = "topic://"; break;
            case TEMP_QUEUE: prefix = "temp-queue://"; break;
            case TEMP_TOPIC: prefix = "temp-topic://"; break;
            default: prefix = "?://";
        }
        return prefix + d.getName();
    }

    static String tx(KahaTransactionInfo info) {
        if (info == null) return null;
        if (info.hasLocalTransactionId()) {
            return new LocalTransactionId(new ConnectionId(info.getLocalTransactionId().getConnectionId()),
                    info.getLocalTransactionId().getTransactionId()).toString();
        }
        if (info.hasXaTransactionId()) {
            XATransactionId x = new XATransactionId();
            x.setFormatId(info.getXaTransactionId().getFormatId());
            x.setGlobalTransactionId(info.getXaTransactionId().getGlobalTransactionId().toByteArray());
            x.setBranchQualifier(info.getXaTransactionId().getBranchQualifier().toByteArray());
            return x.toString();
        }
        return "?";
    }

    static void describe(JournalCommand<?> c, Map<String, Object> rec) {
        if (c instanceof KahaTraceCommand) {
            KahaTraceCommand t = (KahaTraceCommand) c;
            rec.put("trace", t.hasMessage() ? t.getMessage() : null);
        } else if (c instanceof KahaAddMessageCommand) {
            addFields((KahaAddMessageCommand) c, rec);
        } else if (c instanceof KahaUpdateMessageCommand) {
            KahaUpdateMessageCommand u = (KahaUpdateMessageCommand) c;
            if (u.hasMessage()) addFields(u.getMessage(), rec);
        } else if (c instanceof KahaRemoveMessageCommand) {
            KahaRemoveMessageCommand m = (KahaRemoveMessageCommand) c;
            if (m.hasTransactionInfo()) rec.put("tx", tx(m.getTransactionInfo()));
            rec.put("destination", dest(m.getDestination()));
            rec.put("messageId", m.getMessageId());
            if (m.hasSubscriptionKey()) rec.put("subscriptionKey", m.getSubscriptionKey());
            rec.put("ackSize", m.hasAck() ? m.getAck().length : -1);
        } else if (c instanceof KahaPrepareCommand) {
            rec.put("tx", tx(((KahaPrepareCommand) c).getTransactionInfo()));
        } else if (c instanceof KahaCommitCommand) {
            rec.put("tx", tx(((KahaCommitCommand) c).getTransactionInfo()));
        } else if (c instanceof KahaRollbackCommand) {
            rec.put("tx", tx(((KahaRollbackCommand) c).getTransactionInfo()));
        } else if (c instanceof KahaRemoveDestinationCommand) {
            rec.put("destination", dest(((KahaRemoveDestinationCommand) c).getDestination()));
        } else if (c instanceof KahaSubscriptionCommand) {
            KahaSubscriptionCommand s = (KahaSubscriptionCommand) c;
            rec.put("destination", dest(s.getDestination()));
            rec.put("subscriptionKey", s.getSubscriptionKey());
            rec.put("retroactive", s.getRetroactive());
            rec.put("subscriptionInfo", s.hasSubscriptionInfo());
        } else if (c instanceof KahaRewrittenDataFileCommand) {
            KahaRewrittenDataFileCommand w = (KahaRewrittenDataFileCommand) c;
            rec.put("sourceDataFileId", w.getSourceDataFileId());
            rec.put("rewriteType", w.getRewriteType());
            rec.put("skipIfSourceExists", w.getSkipIfSourceExists());
        }
    }

    static void addFields(KahaAddMessageCommand a, Map<String, Object> rec) {
        if (a.hasTransactionInfo()) rec.put("tx", tx(a.getTransactionInfo()));
        rec.put("destination", dest(a.getDestination()));
        rec.put("messageId", a.getMessageId());
        rec.put("priority", a.getPriority());
        rec.put("prioritySupported", a.getPrioritySupported());
        rec.put("messageSize", a.hasMessage() ? a.getMessage().length : -1);
    }

    static void deleteTree(File f) {
        File[] kids = f.listFiles();
        if (kids != null) for (File k : kids) deleteTree(k);
        f.delete();
    }
}
