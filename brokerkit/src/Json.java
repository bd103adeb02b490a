import java.util.Collection;
import java.util.Iterator;
import java.util.Map;

/**
 * Minimal JSON writer (no JSON library is available on the Debian classpath).
 * Supported values: null, String, Number, Boolean, Map (keys as strings, iteration order kept),
 * Collection, arrays of int/long/Object, and {@link Raw} (pre-rendered JSON, inserted verbatim).
 * Output is pretty-printed with 2-space indentation; "short" arrays of scalars stay on one line.
 */
public final class Json {
    private Json() {}

    /** Already-rendered JSON text. */
    public static final class Raw {
        final String text;
        public Raw(String text) { this.text = text.trim(); }
    }

    public static String write(Object v) {
        StringBuilder sb = new StringBuilder();
        write(sb, v, 0);
        sb.append('\n');
        return sb.toString();
    }

    public static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2);
        quote(sb, s);
        return sb.toString();
    }

    static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                case '\b': sb.append("\\b"); break;
                case '\f': sb.append("\\f"); break;
                default:
                    if (c < 0x20 || c == 0x2028 || c == 0x2029 || Character.isSurrogate(c) && !validSurrogate(s, i)) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }

    private static boolean validSurrogate(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }

    private static boolean isScalar(Object v) {
        return v == null || v instanceof String || v instanceof Number || v instanceof Boolean;
    }

    private static void indent(StringBuilder sb, int n) {
        sb.append('\n');
        for (int i = 0; i < n; i++) sb.append("  ");
    }

    @SuppressWarnings("unchecked")
    static void write(StringBuilder sb, Object v, int level) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Raw) {
            // re-indent the raw text so nesting stays readable
            String t = ((Raw) v).text;
            StringBuilder pad = new StringBuilder("\n");
            for (int i = 0; i < level; i++) pad.append("  ");
            sb.append(t.replace("\n", pad.toString()));
        } else if (v instanceof String) {
            quote(sb, (String) v);
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) sb.append("null");
            else sb.append(v.toString());
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v.toString());
        } else if (v instanceof Map) {
            Map<Object, Object> m = (Map<Object, Object>) v;
            if (m.isEmpty()) { sb.append("{}"); return; }
            sb.append('{');
            Iterator<Map.Entry<Object, Object>> it = m.entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<Object, Object> e = it.next();
                indent(sb, level + 1);
                quote(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                write(sb, e.getValue(), level + 1);
                if (it.hasNext()) sb.append(',');
            }
            indent(sb, level);
            sb.append('}');
        } else if (v instanceof Collection) {
            writeList(sb, ((Collection<Object>) v).toArray(), level);
        } else if (v instanceof int[]) {
            int[] a = (int[]) v;
            Object[] o = new Object[a.length];
            for (int i = 0; i < a.length; i++) o[i] = a[i];
            writeList(sb, o, level);
        } else if (v instanceof long[]) {
            long[] a = (long[]) v;
            Object[] o = new Object[a.length];
            for (int i = 0; i < a.length; i++) o[i] = a[i];
            writeList(sb, o, level);
        } else if (v instanceof Object[]) {
            writeList(sb, (Object[]) v, level);
        } else {
            quote(sb, v.toString());
        }
    }

    private static void writeList(StringBuilder sb, Object[] a, int level) {
        if (a.length == 0) { sb.append("[]"); return; }
        boolean scalars = true;
        int len = 0;
        for (Object o : a) {
            if (!isScalar(o)) { scalars = false; break; }
            len += o == null ? 4 : o.toString().length() + 3;
        }
        if (scalars && (len < 100 || allNumbers(a))) {
            sb.append('[');
            for (int i = 0; i < a.length; i++) {
                if (i > 0) sb.append(", ");
                write(sb, a[i], level + 1);
            }
            sb.append(']');
            return;
        }
        sb.append('[');
        for (int i = 0; i < a.length; i++) {
            indent(sb, level + 1);
            if (a[i] instanceof Map && isFlatMap((Map<?, ?>) a[i])) {
                writeFlatMap(sb, (Map<?, ?>) a[i]);
            } else {
                write(sb, a[i], level + 1);
            }
            if (i + 1 < a.length) sb.append(',');
        }
        indent(sb, level);
        sb.append(']');
    }

    private static boolean allNumbers(Object[] a) {
        for (Object o : a) if (!(o instanceof Number)) return false;
        return true;
    }

    private static boolean isFlatMap(Map<?, ?> m) {
        for (Object v : m.values()) if (!isScalar(v)) return false;
        return true;
    }

    /**
     * Minimal JSON parser for our own outputs: objects become LinkedHashMap, arrays ArrayList,
     * numbers Long (or Double), plus String, Boolean, null.
     */
    public static Object parse(String s) {
        Parser p = new Parser(s);
        p.ws();
        Object v = p.value();
        p.ws();
        if (p.i != s.length()) throw new IllegalArgumentException("trailing data at " + p.i);
        return v;
    }

    private static final class Parser {
        final String s;
        int i;
        Parser(String s) { this.s = s; }

        void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

        IllegalArgumentException err(String what) {
            return new IllegalArgumentException("JSON: " + what + " at offset " + i);
        }

        Object value() {
            if (i >= s.length()) throw err("unexpected end");
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    i++;
                    java.util.LinkedHashMap<String, Object> m = new java.util.LinkedHashMap<>();
                    ws();
                    if (s.charAt(i) == '}') { i++; return m; }
                    while (true) {
                        ws();
                        String k = str();
                        ws();
                        if (s.charAt(i++) != ':') throw err("expected ':'");
                        ws();
                        m.put(k, value());
                        ws();
                        char d = s.charAt(i++);
                        if (d == '}') return m;
                        if (d != ',') throw err("expected ',' or '}'");
                    }
                }
                case '[': {
                    i++;
                    java.util.ArrayList<Object> l = new java.util.ArrayList<>();
                    ws();
                    if (s.charAt(i) == ']') { i++; return l; }
                    while (true) {
                        ws();
                        l.add(value());
                        ws();
                        char d = s.charAt(i++);
                        if (d == ']') return l;
                        if (d != ',') throw err("expected ',' or ']'");
                    }
                }
                case '"':
                    return str();
                case 't':
                    expect("true");
                    return Boolean.TRUE;
                case 'f':
                    expect("false");
                    return Boolean.FALSE;
                case 'n':
                    expect("null");
                    return null;
                default:
                    return num();
            }
        }

        void expect(String w) {
            if (!s.startsWith(w, i)) throw err("expected " + w);
            i += w.length();
        }

        Object num() {
            int st = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String t = s.substring(st, i);
            if (t.isEmpty()) throw err("unexpected character");
            if (t.contains(".") || t.contains("e") || t.contains("E")) return Double.parseDouble(t);
            return Long.parseLong(t);
        }

        String str() {
            if (s.charAt(i) != '"') throw err("expected string");
            i++;
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c != '\\') { b.append(c); continue; }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: b.append(e);
                }
            }
        }
    }

    /** A map of scalars on one line (used for record lists). */
    private static void writeFlatMap(StringBuilder sb, Map<?, ?> m) {
        sb.append('{');
        boolean first = true;
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (!first) sb.append(", ");
            first = false;
            quote(sb, String.valueOf(e.getKey()));
            sb.append(": ");
            write(sb, e.getValue(), 0);
        }
        sb.append('}');
    }
}
