import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import javax.jms.Connection;
import javax.jms.MessageConsumer;
import javax.jms.Session;

import org.apache.activemq.command.ActiveMQQueue;
import org.apache.activemq.command.ActiveMQTopic;

/**
 * Scenarios where a restarted broker and a naive reading of the journal disagree (issue 12): ack-compaction
 * files whose source file the broker has since deleted, before and after the index's recovery position, and a
 * compaction file whose source is itself a compaction file. Registered in {@link Scenarios}; each runs in a
 * child JVM like every scenario.
 *
 * <p>All use 4 KiB journal files so that a few records fill a file, explicit cleanups
 * ({@code adapter.checkpoint(true)}) and ack compaction after two cleanups that delete nothing, whatever the
 * store's growth. Where a record lands is checked after the run ({@link #check}), not assumed.
 */
final class Fidelity {
    private Fidelity() {}

    static final String[] NAMES = {"ackfwd-gone", "ackfwd-gone-tail", "ackfwd-chain", "priority"};

    static boolean has(String name) {
        for (String n : NAMES) if (n.equals(name)) return true;
        return false;
    }

    static Scenarios.Cfg cfg(String name) {
        Scenarios.Cfg c = new Scenarios.Cfg();
        c.name = name;
        c.maxLen = 4096;
        c.compactAcksAfterNoGC = 2;
        c.compactAcksIgnoresStoreGrowth = true;
        String common = "Q.PIN keeps one message in db-1.log; Q.T gets two messages in a local transaction whose adds "
                + "are in db-1.log and whose commit is in a later file X, then one more message outside the transaction "
                + "(delivery order: the two committed first); the acks of Q.W's 6 messages and of durable subscription "
                + "c-a:s-a's 4 messages on T.D (c-b:s-b keeps them) are in X too. Cleanup cycles that delete nothing make "
                + "the broker forward X's acks and commit into an ack-compaction file C "
                + "(KAHA_REWRITTEN_DATA_FILE_COMMAND{source X}); a later cleanup deletes X. 4 KiB journal files, "
                + "preallocationScope=none, compactAcksAfterNoGC=2, compactAcksIgnoresStoreGrowth=true, explicit cleanups. ";
        if (name.equals("priority")) {
            c.maxLen = 64 * 1024;
            c.compactAcksAfterNoGC = null;
            c.compactAcksIgnoresStoreGrowth = null;
            c.policies = new ArrayList<>();
            for (String q : new String[]{"Q.PRIO", "Q.PRIO.SMALL"}) {
                Map<String, Object> pol = new java.util.LinkedHashMap<>();
                pol.put("queue", q);
                pol.put("prioritizedMessages", true);
                c.policies.add(pol);
            }
            c.description = "Prioritized queues (prioritizedMessages=true): Q.PRIO gets 480 messages with JMS priorities "
                    + "0-9 from java.util.Random(42), of which a consumer takes 30; Q.PRIO.SMALL 90 messages, priorities "
                    + "0-9; Q.PLAIN (not prioritized) 40 with mixed priorities. More than maxPageSize (200) pending on "
                    + "Q.PRIO: the broker dispatches it by priority page by page. 64 KiB journal files, "
                    + "preallocationScope=none, stopped cleanly. expected.json's brokerView is what a restarted "
                    + "BrokerService with the same policies delivers (BrokerView: one consumer, default prefetch).";
            return c;
        }
        switch (name) {
            case "ackfwd-gone":
                c.description = common + "The broker then writes past C (the index's last update is in a file after C) "
                        + "and stops cleanly (cleanupOnStop=false): a broker restarted with the index does not replay C, "
                        + "whose forwarded acks are the only trace left of acks it applied when they were first written; "
                        + "one rebuilding the index replays C's forwarded acks and commit where C is.";
                break;
            case "ackfwd-gone-tail":
                c.description = common + "The broker stops (cleanupOnStop=false) while its last update is still in a "
                        + "file before C: a broker restarted with the index replays C (its source is gone) over an index "
                        + "that already holds the effect of the acks.";
                break;
            case "ackfwd-chain":
                c.description = common + "A second file Y of acks is forwarded into C' in the same way; both sources go. "
                        + "After a restart (the broker forgets which files are compaction files) the oldest file of acks is "
                        + "C, which is forwarded in turn into C2 (KAHA_REWRITTEN_DATA_FILE_COMMAND{source C}); a cleanup "
                        + "deletes C. Stopped cleanly with cleanupOnStop=false.";
                break;
            default:
                throw new IllegalArgumentException(name);
        }
        return c;
    }

    /** A message too big to share a 4 KiB file, sent to Q.FILL and consumed: the journal moves to a new file. */
    static void rotate(Scenarios.Ctx x, Session s) throws Exception {
        ActiveMQQueue fill = new ActiveMQQueue("Q.FILL");
        Scenarios.send(s, fill, "Q.FILL", 0, 1, 3700, null);
        MessageConsumer mc = s.createConsumer(fill);
        Scenarios.receive(mc, 1);
        mc.close();
    }

    /** Cleanup cycles until the broker reserves a new file for forwarded acks; returns the file it reserved. */
    static String compactAcks(Scenarios.Ctx x) throws Exception {
        int before = Logs.reservedLines().size();
        int done = Logs.linesContaining("ACK File Map following updates").size();
        for (int cycles = 0; cycles < 12 && Logs.reservedLines().size() == before; cycles++) {
            x.gc();
            long w = System.currentTimeMillis() + 300;
            while (Logs.reservedLines().size() == before && System.currentTimeMillis() < w) Scenarios.sleep(10);
        }
        List<String> r = Logs.reservedLines();
        if (r.size() == before) throw new IllegalStateException("no ack compaction after 12 cleanups");
        long w = System.currentTimeMillis() + 5000;
        while (Logs.linesContaining("ACK File Map following updates").size() == done && System.currentTimeMillis() < w) {
            Scenarios.sleep(10);
        }
        Scenarios.sleep(200);
        String f = r.get(r.size() - 1);
        x.step("ack compaction: reserved " + f);
        return f;
    }

    static void priority(Scenarios.Ctx x) throws Exception {
        org.apache.activemq.broker.region.policy.PolicyEntry[] es = new org.apache.activemq.broker.region.policy.PolicyEntry[2];
        String[] qs = {"Q.PRIO", "Q.PRIO.SMALL"};
        for (int i = 0; i < qs.length; i++) {
            es[i] = new org.apache.activemq.broker.region.policy.PolicyEntry();
            es[i].setQueue(qs[i]);
            es[i].setPrioritizedMessages(true);
        }
        x.start(Scenarios.policies(es));
        Connection c = x.conn(null);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        java.util.Random rnd = new java.util.Random(42);
        ActiveMQQueue prio = new ActiveMQQueue("Q.PRIO");
        Scenarios.send(s, prio, "Q.PRIO", 0, 480, 120, i -> rnd.nextInt(10));
        MessageConsumer mc = s.createConsumer(prio);
        Scenarios.receive(mc, 30);
        mc.close();
        Scenarios.send(s, new ActiveMQQueue("Q.PRIO.SMALL"), "Q.PRIO.SMALL", 0, 90, 120, i -> rnd.nextInt(10));
        Scenarios.send(s, new ActiveMQQueue("Q.PLAIN"), "Q.PLAIN", 0, 40, 120, i -> rnd.nextInt(10));
        x.step("Q.PRIO 480 sent (priorities 0-9), 30 consumed; Q.PRIO.SMALL 90, Q.PLAIN 40 sent");
        c.close();
        x.stop();
        x.expectQueues.put("Q.PRIO", 450);
        x.expectQueues.put("Q.PRIO.SMALL", 90);
        x.expectQueues.put("Q.PLAIN", 40);
    }

    static void run(Scenarios.Ctx x) throws Exception {
        String name = x.cfg.name;
        if (name.equals("priority")) {
            priority(x);
            return;
        }
        x.start(null);
        ActiveMQTopic td = new ActiveMQTopic("T.D");
        Scenarios.createDurable(x, "c-a", "s-a", td, null);
        Scenarios.createDurable(x, "c-b", "s-b", td, null);
        Connection c = x.conn(null);
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Session ts = c.createSession(true, Session.SESSION_TRANSACTED);
        ActiveMQQueue pin = new ActiveMQQueue("Q.PIN");
        ActiveMQQueue pin2 = new ActiveMQQueue("Q.PIN2");
        ActiveMQQueue qt = new ActiveMQQueue("Q.T");
        ActiveMQQueue qw = new ActiveMQQueue("Q.W");
        List<String> pinIDs = Scenarios.send(s, pin, "Q.PIN", 0, 1, 100, null);
        Scenarios.send(s, pin2, "Q.PIN2", 0, 1, 100, null);
        List<String> order = new ArrayList<>(Scenarios.send(ts, qt, "Q.T", 0, 2, 100, null));
        Scenarios.send(s, qw, "Q.W", 0, 6, 100, null);
        List<String> topicIDs = Scenarios.send(s, td, "T.D", 0, 4, 100, null);
        x.step("sent: Q.PIN 1, Q.PIN2 1, Q.T 2 in a local transaction (not committed), Q.W 6, T.D 4");
        rotate(x, s);
        ts.commit();
        MessageConsumer mc = s.createConsumer(qw);
        Scenarios.receive(mc, 6);
        mc.close();
        Scenarios.consumeDurable(x, "c-a", "s-a", td, null, 4);
        x.step("file X: Q.T committed, Q.W 6 consumed, c-a:s-a consumed 4");
        rotate(x, s);
        order.addAll(Scenarios.send(s, qt, "Q.T", 2, 1, 100, null));
        mc = s.createConsumer(pin2);
        Scenarios.receive(mc, 1);
        mc.close();
        x.step("file Y: Q.T 1 more (no transaction), Q.PIN2 consumed");
        rotate(x, s);
        rotate(x, s);
        x.gc();
        compactAcks(x);
        if (name.equals("ackfwd-chain")) compactAcks(x);
        if (!name.equals("ackfwd-gone-tail")) {
            rotate(x, s);
            rotate(x, s);
        }
        x.gc();
        if (name.equals("ackfwd-chain")) {
            c.close();
            x.stop();
            x.start(null);
            x.step("restarted: the broker no longer knows which files are compaction files");
            c = x.conn(null);
            s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            compactAcks(x);
            rotate(x, s);
            rotate(x, s);
            x.gc();
        }
        c.close();
        x.stop();

        x.expectQueues.put("Q.PIN", 1);
        x.expectQueues.put("Q.PIN2", 0);
        x.expectQueues.put("Q.W", 0);
        x.expectQueues.put("Q.T", 3);
        x.expectSubs.put("topic://T.D|c-a:s-a", 0);
        x.expectSubs.put("topic://T.D|c-b:s-b", 4);
        x.notes.put("Q.T delivery order", order);
        x.notes.put("Q.PIN", pinIDs);
        x.notes.put("T.D", topicIDs);
    }

    /**
     * Checks that the records landed where the scenario needs them: every compaction file's source is gone, and
     * the last record outside compaction files is in a file after them (ackfwd-gone, ackfwd-chain: a broker
     * restarted with the index does not replay them) or before them (ackfwd-gone-tail: it does). ackfwd-chain
     * needs three compactions, one of whose source is a compaction file.
     */
    @SuppressWarnings("unchecked")
    static List<String> check(String name, Records.Result rec, Map<String, Object> run, Map<String, Object> ins) {
        List<String> p = new ArrayList<>();
        if (name.equals("priority")) return p;
        List<Integer> present = new ArrayList<>();
        for (Object o : (List<Object>) ins.get("filesBefore")) present.add(((Number) o).intValue());
        Map<Integer, Integer> source = new java.util.TreeMap<>(); // compaction file -> source
        for (Map<String, Object> r : rec.records) {
            if ("KAHA_REWRITTEN_DATA_FILE_COMMAND".equals(r.get("type"))) {
                source.put(((Number) r.get("file")).intValue(), ((Number) r.get("sourceDataFileId")).intValue());
            }
        }
        int lastFile = 0;
        for (Map<String, Object> r : rec.records) {
            int f = ((Number) r.get("file")).intValue();
            if (!source.containsKey(f)) lastFile = Math.max(lastFile, f);
        }
        if (source.isEmpty()) p.add("no ack-compaction file left in the store");
        List<Integer> reserved = new ArrayList<>();
        for (Object o : (List<Object>) run.get("reservedForForwardedAcks")) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("number = (\\d+)").matcher(o.toString());
            if (m.find()) reserved.add(Integer.parseInt(m.group(1)));
        }
        boolean gone = false;
        for (Map.Entry<Integer, Integer> e : source.entrySet()) {
            boolean chainLink = reserved.contains(e.getValue());
            if (!present.contains(e.getValue()) && (chainLink || !name.equals("ackfwd-chain"))) gone = true;
            if (present.contains(e.getValue()) && !name.equals("ackfwd-chain")) {
                p.add("the source db-" + e.getValue() + ".log of compaction file db-" + e.getKey() + ".log is still there");
            }
            boolean after = lastFile > e.getKey();
            if (name.equals("ackfwd-gone-tail") && after) {
                p.add("db-" + lastFile + ".log was written after compaction file db-" + e.getKey() + ".log");
            }
            if (!name.equals("ackfwd-gone-tail") && !after) {
                p.add("nothing was written after compaction file db-" + e.getKey() + ".log");
            }
        }
        if (!gone) p.add("no compaction file whose source is gone");
        if (name.equals("ackfwd-chain")) {
            if (reserved.size() < 3) p.add("expected three ack compactions, the broker made " + reserved);
            boolean chained = false;
            for (int src : source.values()) if (reserved.contains(src)) chained = true;
            if (!chained) p.add("no compaction file left whose source was a compaction file (reserved " + reserved + ")");
        }
        return p;
    }
}
