import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.jms.InvalidSelectorException;

import org.apache.activemq.command.ActiveMQDestination;
import org.apache.activemq.command.ActiveMQMessage;
import org.apache.activemq.command.BrokerId;
import org.apache.activemq.command.ConnectionId;
import org.apache.activemq.command.LocalTransactionId;
import org.apache.activemq.command.Message;
import org.apache.activemq.command.MessageId;
import org.apache.activemq.filter.BooleanExpression;
import org.apache.activemq.filter.MessageEvaluationContext;
import org.apache.activemq.filter.NonCachedMessageEvaluationContext;
import org.apache.activemq.openwire.OpenWireFormat;
import org.apache.activemq.selector.SelectorParser;
import org.apache.activemq.util.ByteSequence;

/**
 * The oracle of kahafs's selector package: ActiveMQ's own JMS selector parser and evaluator
 * (org.apache.activemq.selector.SelectorParser.parse, BooleanExpression.matches, as a broker's
 * subscription calls it) on a corpus of selectors and messages. No broker runs.
 *
 * Usage: SelectorCheck IN.json OUT.json      (the Go tests write IN.json)
 *        SelectorCheck --explore             (selectors on stdin, one a line, \\uXXXX escapes decoded)
 *
 * IN.json:
 *   {"messages":[{"headers":{...},"properties":[["name",{"type":"int","value":5}],...]}, ...],
 *    "cases":[{"selector":"a > 1","messages":[0,1,...]}, ...]}
 *
 * headers (all optional): messageId ("ID:host-1-2-3:1:1:1:5"), destination, originalDestination, replyTo
 * ("queue://Q", "topic://T", "temp-queue://...", "temp-topic://..."), type, correlationId, groupId, userId
 * (strings), groupSeq, priority, redeliveryCounter (numbers), timestamp, expiration, brokerInTime, brokerOutTime
 * (numbers), persistent, groupFirst (booleans), brokerPath (array of strings), transactionId,
 * originalTransactionId ({"conn":"ID:...","n":5}: a LocalTransactionId).
 * Or a message is {"blob":"base64"}: a message as a store holds it (KahaAddMessageCommand.message).
 * A property value is {"type":T,"value":V} with T one of null boolean byte short char (V: the UTF-16 unit)
 * int long string, float and double (V: the raw bits as a decimal string), bytes (V: base64), map (V: an
 * object of typed values), list (V: an array of typed values).
 *
 * Each message is marshalled as a KahaDB store writes it (new OpenWireFormat(11): loose encoding, no cache,
 * size prefix) and read back from those bytes, as the broker reads it from the store; the blob is in the
 * output, so that the Go side decodes the very same bytes.
 *
 * OUT.json:
 *   {"blobs":["base64", ...],
 *    "results":[{"parse":"ok","expr":"(a > 1)","match":["T","F","!java.lang.ClassCastException", ...]}
 *              |{"parse":"error","cause":"class: message"}, ...]}
 * match has one entry per listed message: T or F (BooleanExpression.matches), ! and the class of what it
 * threw, or X for a blob OpenWireFormat cannot unmarshal.
 *
 * SelectorParser caches parse results (100 entries, keyed by the selector without its
 * "convert_string_expressions:" prefix, so a prefixed selector changes what the bare one parses to later):
 * the cache is cleared before every parse so that each case stands alone.
 */
public final class SelectorCheck {
    private SelectorCheck() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--explore")) {
            explore();
            return;
        }
        if (args.length != 2) {
            System.err.println("usage: SelectorCheck IN.json OUT.json | SelectorCheck --explore");
            System.exit(2);
        }
        String in = new String(Files.readAllBytes(new File(args[0]).toPath()), StandardCharsets.UTF_8);
        @SuppressWarnings("unchecked")
        Map<String, Object> doc = (Map<String, Object>) Json.parse(in);
        List<Message> msgs = new ArrayList<>();
        List<Object> blobs = new ArrayList<>();
        for (Object o : (List<?>) doc.get("messages")) {
            Map<?, ?> spec = (Map<?, ?>) o;
            byte[] blob;
            if (spec.get("blob") != null) {
                blob = Base64.getDecoder().decode((String) spec.get("blob"));
            } else {
                OpenWireFormat wf = new OpenWireFormat(11); // as KahaDBStore: loose, no cache, size prefix
                ByteSequence b = wf.marshal(message(spec));
                blob = Arrays.copyOfRange(b.getData(), b.getOffset(), b.getOffset() + b.getLength());
            }
            blobs.add(Base64.getEncoder().encodeToString(blob));
            try {
                msgs.add((Message) new OpenWireFormat(11).unmarshal(new ByteSequence(blob)));
            } catch (Exception e) {
                msgs.add(null); // a stored message the broker cannot read (hostile names): X
            }
        }
        List<Object> results = new ArrayList<>();
        for (Object o : (List<?>) doc.get("cases")) {
            Map<?, ?> c = (Map<?, ?>) o;
            String sel = (String) c.get("selector");
            Map<String, Object> r = new LinkedHashMap<>();
            BooleanExpression e;
            try {
                e = parse(sel);
            } catch (InvalidSelectorException ex) {
                r.put("parse", "error");
                r.put("cause", cause(ex));
                results.add(r);
                continue;
            }
            r.put("parse", "ok");
            try {
                r.put("expr", e.toString());
            } catch (Throwable t) {
                r.put("expr", "!" + t.getClass().getName());
            }
            List<Object> match = new ArrayList<>();
            for (Object idx : (List<?>) c.get("messages")) {
                Message m = msgs.get(((Number) idx).intValue());
                if (m == null) {
                    match.add("X");
                    continue;
                }
                // A fresh message each time: the properties map is unmarshalled lazily and kept.
                m = m.copy();
                MessageEvaluationContext ctx = new NonCachedMessageEvaluationContext();
                ctx.setDestination(m.getDestination());
                ctx.setMessageReference(m);
                try {
                    match.add(e.matches(ctx) ? "T" : "F");
                } catch (Throwable t) {
                    match.add("!" + t.getClass().getName());
                }
            }
            r.put("match", match);
            results.add(r);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("blobs", blobs);
        out.put("results", results);
        Files.write(new File(args[1]).toPath(), Json.write(out).getBytes(StandardCharsets.UTF_8));
    }

    static BooleanExpression parse(String sel) throws InvalidSelectorException {
        SelectorParser.clearCache();
        return SelectorParser.parse(sel);
    }

    /** The innermost cause of a rejection: what the parser or an expression factory threw. */
    static String cause(Throwable ex) {
        Throwable t = ex;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String msg = String.valueOf(t.getMessage());
        if (msg.length() > 300) {
            msg = msg.substring(0, 300) + "...";
        }
        return t.getClass().getName() + ": " + msg;
    }

    static void explore() throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = r.readLine()) != null;) {
            String sel = unescape(line);
            try {
                BooleanExpression e = parse(sel);
                System.out.println("OK    " + line + "    => " + e);
            } catch (InvalidSelectorException ex) {
                System.out.println("ERROR " + line + "    => " + cause(ex));
            } catch (Throwable t) {
                System.out.println("THROW " + line + "    => " + t);
            }
        }
    }

    static String unescape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 5 < s.length() + 0 && s.charAt(i + 1) == 'u') {
                b.append((char) Integer.parseInt(s.substring(i + 2, i + 6), 16));
                i += 5;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    static Message message(Map<?, ?> spec) throws Exception {
        ActiveMQMessage m = new ActiveMQMessage();
        Map<?, ?> h = spec.get("headers") == null ? new LinkedHashMap<>() : (Map<?, ?>) spec.get("headers");
        if (h.get("messageId") != null) {
            MessageId id = new MessageId((String) h.get("messageId"));
            m.setMessageId(id);
            m.setProducerId(id.getProducerId());
        }
        m.setDestination(dest(h.get("destination")));
        m.setOriginalDestination(dest(h.get("originalDestination")));
        m.setReplyTo(dest(h.get("replyTo")));
        m.setType((String) h.get("type"));
        m.setCorrelationId((String) h.get("correlationId"));
        m.setGroupID((String) h.get("groupId"));
        m.setUserID((String) h.get("userId"));
        m.setGroupSequence(intOf(h.get("groupSeq")));
        m.setPriority((byte) intOf(h.get("priority")));
        m.setRedeliveryCounter(intOf(h.get("redeliveryCounter")));
        m.setTimestamp(longOf(h.get("timestamp")));
        m.setExpiration(longOf(h.get("expiration")));
        m.setBrokerInTime(longOf(h.get("brokerInTime")));
        m.setBrokerOutTime(longOf(h.get("brokerOutTime")));
        m.setPersistent(Boolean.TRUE.equals(h.get("persistent")));
        m.setJMSXGroupFirstForConsumer(Boolean.TRUE.equals(h.get("groupFirst")));
        if (h.get("brokerPath") != null) {
            List<?> l = (List<?>) h.get("brokerPath");
            BrokerId[] p = new BrokerId[l.size()];
            for (int i = 0; i < p.length; i++) {
                p[i] = new BrokerId((String) l.get(i));
            }
            m.setBrokerPath(p);
        }
        m.setTransactionId(tx(h.get("transactionId")));
        m.setOriginalTransactionId(tx(h.get("originalTransactionId")));
        if (spec.get("properties") != null) {
            for (Object o : (List<?>) spec.get("properties")) {
                List<?> p = (List<?>) o;
                m.setProperty((String) p.get(0), value((Map<?, ?>) p.get(1)));
            }
        }
        return m;
    }

    static ActiveMQDestination dest(Object o) {
        if (o == null) {
            return null;
        }
        return ActiveMQDestination.createDestination((String) o, ActiveMQDestination.QUEUE_TYPE);
    }

    static LocalTransactionId tx(Object o) {
        if (o == null) {
            return null;
        }
        Map<?, ?> t = (Map<?, ?>) o;
        return new LocalTransactionId(new ConnectionId((String) t.get("conn")), longOf(t.get("n")));
    }

    static int intOf(Object o) {
        return o == null ? 0 : ((Number) o).intValue();
    }

    static long longOf(Object o) {
        return o == null ? 0 : ((Number) o).longValue();
    }

    static Object value(Map<?, ?> tv) {
        String t = (String) tv.get("type");
        Object v = tv.get("value");
        switch (t) {
            case "null": return null;
            case "boolean": return (Boolean) v;
            case "byte": return Byte.valueOf((byte) ((Number) v).longValue());
            case "short": return Short.valueOf((short) ((Number) v).longValue());
            case "char": return Character.valueOf((char) ((Number) v).longValue());
            case "int": return Integer.valueOf((int) ((Number) v).longValue());
            case "long": return Long.valueOf(((Number) v).longValue());
            case "float": return Float.intBitsToFloat((int) Long.parseLong((String) v));
            case "double": return Double.longBitsToDouble(Long.parseUnsignedLong((String) v));
            case "string": return (String) v;
            case "bytes": return Base64.getDecoder().decode((String) v);
            case "map": {
                Map<String, Object> m = new java.util.HashMap<>();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    m.put((String) e.getKey(), value((Map<?, ?>) e.getValue()));
                }
                return m;
            }
            case "list": {
                List<Object> l = new ArrayList<>();
                for (Object e : (List<?>) v) {
                    l.add(value((Map<?, ?>) e));
                }
                return l;
            }
            default:
                throw new IllegalArgumentException("property type " + t);
        }
    }
}
