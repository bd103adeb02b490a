import java.io.File;
import java.io.FileWriter;
import java.io.Writer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.apache.activemq.broker.scheduler.Job;
import org.apache.activemq.broker.scheduler.JobScheduler;
import org.apache.activemq.openwire.OpenWireFormat;
import org.apache.activemq.command.Message;
import org.apache.activemq.store.kahadb.scheduler.JobSchedulerStoreImpl;
import org.apache.activemq.util.ByteSequence;

/**
 * SchedulerCleanup STORE_DIR OUT.json [--max-file-length N] [--log FILE]:
 * opens the job scheduler store as it is (scheduleDB.data included) with a
 * standalone JobSchedulerStoreImpl, as a broker's start does (recovery,
 * the "LOADED" trace; periodic checkpoint and cleanup off), lists the jobs
 * of its "JMS" scheduler (the broker's), then stop()s it: the stop-time
 * checkpoint with cleanup (cleanupOnStop true) is the broker's first
 * cleanup. A standalone store never fires a job (the broker starts the
 * dispatch thread), so what the cleanup deletes does not depend on the
 * time it runs. MODIFIES THE STORE: run it on a copy.
 *
 *   {"maxFileLength":8192, "filesBefore":[..], "filesAfter":[..], "deleted":[..],
 *    "cleanupLines":["[10, 11, 12]"],
 *    "jobs":[{"jobId":..,"start":..,"delay":..,"period":..,"repeat":..,"cron":..,
 *             "nextTime":..,"messageId":..,"destination":..}]}
 */
public class SchedulerCleanup {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: SchedulerCleanup STORE_DIR OUT.json [--max-file-length N] [--log FILE]");
            System.exit(2);
        }
        File dir = new File(args[0]);
        int maxLen = 32 * 1024 * 1024;
        File log = null;
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("--max-file-length")) {
                maxLen = Integer.parseInt(args[++i]);
            } else if (args[i].equals("--log")) {
                log = new File(args[++i]);
            } else {
                throw new IllegalArgumentException(args[i]);
            }
        }
        Logs.setup(log);
        TreeSet<Integer> before = dataFiles(dir);

        JobSchedulerStoreImpl js = new JobSchedulerStoreImpl();
        js.setDirectory(dir);
        js.setJournalMaxFileLength(maxLen);
        js.setCheckpointInterval(0);
        js.setCleanupInterval(0);
        js.setCleanupOnStop(true);
        js.start();
        List<Object> jobs = new ArrayList<>();
        JobScheduler s = js.getJobScheduler("JMS");
        OpenWireFormat wf = new OpenWireFormat();
        for (Job j : s.getAllJobs()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("jobId", j.getJobId());
            m.put("start", j.getStartTime());
            m.put("delay", j.getDelay());
            m.put("period", j.getPeriod());
            m.put("repeat", j.getRepeat());
            m.put("cron", j.getCronEntry());
            m.put("nextTime", j.getNextExecutionTime());
            m.put("executionCount", j.getExecutionCount());
            Message msg = (Message) wf.unmarshal(new ByteSequence(j.getPayload()));
            m.put("messageId", msg.getMessageId().toString());
            m.put("destination", msg.getDestination().getQualifiedName());
            jobs.add(m);
        }
        js.stop();
        Logs.flush();
        TreeSet<Integer> after = dataFiles(dir);
        TreeSet<Integer> deleted = new TreeSet<>(before);
        deleted.removeAll(after);

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("maxFileLength", maxLen);
        out.put("filesBefore", new ArrayList<>(before));
        out.put("filesAfter", new ArrayList<>(after));
        out.put("deleted", new ArrayList<>(deleted));
        out.put("cleanupLines", Logs.cleanupLines());
        out.put("jobs", jobs);
        try (Writer w = new FileWriter(args[1])) {
            w.write(Json.write(out));
            w.write("\n");
        }
        System.exit(0);
    }

    static TreeSet<Integer> dataFiles(File dir) {
        TreeSet<Integer> ids = new TreeSet<>();
        String[] names = dir.list();
        if (names == null) return ids;
        for (String n : names) {
            if (n.startsWith("db-") && n.endsWith(".log")) {
                try {
                    ids.add(Integer.parseInt(n.substring(3, n.length() - 4)));
                } catch (NumberFormatException e) {
                    // not a data file
                }
            }
        }
        return ids;
    }
}
