import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.FileHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * JUL setup (ActiveMQ logs through slf4j-jdk14 -> java.util.logging; slf4j TRACE = FINEST).
 * org.apache.activemq.store.kahadb is logged at ALL so the GC lines (TRACE/DEBUG) are visible.
 * A capture handler keeps the GC/compaction lines the tools report on.
 */
public final class Logs {
    public static final String KAHADB_LOGGER = "org.apache.activemq.store.kahadb";
    public static final String CLEANUP_PREFIX = "Cleanup removing the data files: ";
    public static final String RESERVED_PREFIX = "Reserved file for forwarded acks: ";

    // strong references: JUL loggers are weakly held, levels would be lost on GC
    private static final List<Logger> KEEP = new ArrayList<>();
    private static final Capture CAPTURE = new Capture();

    private Logs() {}

    /** Configure logging; if logFile != null everything (kahadb at FINEST, rest at INFO) goes there. */
    public static synchronized void setup(File logFile) throws IOException {
        setup(logFile, true);
    }

    /** The class whose TRACE lines explain each cleanup (gc candidates, rewrites). */
    public static final String MESSAGE_DATABASE = KAHADB_LOGGER + ".MessageDatabase";

    /**
     * Like setup(logFile), but with gcTrace false MessageDatabase logs at DEBUG, not TRACE: with TRACE on,
     * 5.17.2's cleanup throws a NullPointerException (AMQ-9780) while formatting "sub .. has pendingCount"
     * for a durable subscription without ackPositions whose file is a candidate but not the first one, and
     * the broker stops itself. A broker in production does not log at TRACE, so it never hits this.
     * The DEBUG lines ("Cleanup removing the data files: ..") are still captured.
     */
    public static synchronized void setup(File logFile, boolean gcTrace) throws IOException {
        setupHandlers(logFile);
        if (!gcTrace) {
            Logger md = Logger.getLogger(MESSAGE_DATABASE);
            md.setLevel(Level.FINE);
            KEEP.add(md);
        }
    }

    private static void setupHandlers(File logFile) throws IOException {
        LogManager.getLogManager().reset();
        Logger root = Logger.getLogger("");
        root.setLevel(Level.INFO);
        KEEP.add(root);
        Logger kaha = Logger.getLogger(KAHADB_LOGGER);
        kaha.setLevel(Level.ALL);
        KEEP.add(kaha);
        // BTreeIndex logs "loading" at DEBUG for every index access: noise
        Logger idx = Logger.getLogger(KAHADB_LOGGER + ".disk.index");
        idx.setLevel(Level.INFO);
        KEEP.add(idx);
        // the broker's own chatter is not needed below INFO
        Logger amq = Logger.getLogger("org.apache.activemq");
        amq.setLevel(Level.INFO);
        KEEP.add(amq);
        // BROKERKIT_TRACE: loggers (comma-separated names) logged at TRACE too,
        // to see what the broker does where a tool's answer is in question
        String extra = System.getenv("BROKERKIT_TRACE");
        if (extra != null) {
            for (String name : extra.split(",")) {
                if (name.isBlank()) continue;
                Logger l = Logger.getLogger(name.trim());
                l.setLevel(Level.ALL);
                KEEP.add(l);
            }
        }
        CAPTURE.setLevel(Level.ALL);
        root.addHandler(CAPTURE);
        if (logFile != null) {
            File parent = logFile.getAbsoluteFile().getParentFile();
            if (parent != null) parent.mkdirs();
            FileHandler fh = new FileHandler(logFile.getPath(), 0, 1, true);
            fh.setEncoding("UTF-8");
            fh.setLevel(Level.ALL);
            fh.setFormatter(new LineFormatter());
            root.addHandler(fh);
        }
    }

    public static synchronized void flush() {
        for (Handler h : Logger.getLogger("").getHandlers()) h.flush();
    }

    /** Bracketed file lists of every "Cleanup removing the data files: [..]" line so far. */
    public static List<String> cleanupLines() { return CAPTURE.snapshot(CLEANUP_PREFIX); }

    /** Texts after "Reserved file for forwarded acks: " so far. */
    public static List<String> reservedLines() { return CAPTURE.snapshot(RESERVED_PREFIX); }

    /** All captured lines containing the given text. */
    public static List<String> linesContaining(String text) {
        synchronized (CAPTURE.lines) {
            List<String> r = new ArrayList<>();
            for (String s : CAPTURE.lines) if (s.contains(text)) r.add(s);
            return r;
        }
    }

    /** Parse "[1, 2, 3]" into ints. */
    public static List<Integer> parseIdList(String bracketed) {
        List<Integer> r = new ArrayList<>();
        String s = bracketed.trim();
        if (s.startsWith("[")) s = s.substring(1);
        if (s.endsWith("]")) s = s.substring(0, s.length() - 1);
        for (String p : s.split(",")) {
            p = p.trim();
            if (!p.isEmpty()) r.add(Integer.parseInt(p));
        }
        return r;
    }

    static final class Capture extends Handler {
        final List<String> lines = new ArrayList<>();

        @Override
        public void publish(LogRecord r) {
            if (r.getLoggerName() == null || !r.getLoggerName().startsWith(KAHADB_LOGGER)) return;
            String m = r.getMessage();
            if (m == null) return;
            synchronized (lines) {
                lines.add(m);
            }
        }

        List<String> snapshot(String prefix) {
            List<String> r = new ArrayList<>();
            synchronized (lines) {
                for (String s : lines) {
                    if (s.startsWith(prefix)) r.add(s.substring(prefix.length()).trim());
                }
            }
            return r;
        }

        @Override public void flush() {}
        @Override public void close() {}
    }

    static final class LineFormatter extends Formatter {
        @Override
        public String format(LogRecord r) {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format("%1$tF %1$tT.%1$tL", r.getMillis()));
            sb.append(' ').append(levelName(r.getLevel()));
            sb.append(' ').append(shortName(r.getLoggerName()));
            sb.append(" [").append(Thread.currentThread().getName()).append("] ");
            sb.append(r.getMessage());
            sb.append('\n');
            if (r.getThrown() != null) {
                java.io.StringWriter sw = new java.io.StringWriter();
                r.getThrown().printStackTrace(new java.io.PrintWriter(sw));
                sb.append(sw);
            }
            return sb.toString();
        }

        private static String levelName(Level l) {
            if (l == Level.FINEST) return "TRACE";
            if (l == Level.FINE) return "DEBUG";
            if (l == Level.SEVERE) return "ERROR";
            if (l == Level.WARNING) return "WARN ";
            if (l == Level.INFO) return "INFO ";
            return l.getName();
        }

        private static String shortName(String n) {
            if (n == null) return "-";
            int i = n.lastIndexOf('.');
            return i >= 0 ? n.substring(i + 1) : n;
        }
    }
}
