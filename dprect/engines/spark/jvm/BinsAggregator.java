package dprect.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;

/**
 * The JVM bin count (issue #41; dprect/engines/spark/jvm_bins.py): describe's sufficient
 * statistics counted in the JVM, only the merged cells handed to Python ({@link #cells}, the
 * product's route on a classic session; {@link #run}, benchmarks/aggregate_jvm_side.py's
 * {@code jvmbins}). Built by {@code make setup} ({@code javac --release 17} against
 * pyspark's jars) into .jars/spark-&lt;major.minor&gt;/dprect-bins-{@link #VERSION}.jar.
 * No message of it carries a value: its refusals name types only.
 *
 * <p>Per row: ONE hash lookup (the row's public group, an open-addressing long to int map),
 * then per column the value's IEEE bits b ({@link Double#doubleToRawLongBits}) give its
 * search bin — ((b &amp; ABS) &gt;&gt; shift) + H for b &ge; 0 or −0.0, (~b) &gt;&gt; shift
 * for any other negative b (FloatBins' unsigned order key &gt;&gt; shift) — and its truncated
 * significand M = ((|b| &amp; MANTISSA) &gt;&gt; drop) | [|b| &ge; 2^52]·2^(52 − drop),
 * negated for b &lt; 0 (dprect/engines/spark/describe_jit.py's definitions); the bin's row
 * count and the sum of M (and, with {@code squares}, of the high and low 30-bit words of
 * M²) are added in place in a dense table (count and sums side by side). Non-finite and
 * null values are skipped (the pass counts finite values), rows of a group outside the
 * public list are dropped.
 *
 * <p>Memory is bounded whatever the values' spread (issue #41, s36): column by column, a
 * (column, sign)'s bin-major table over every group spans at most max(1, cells / groups)
 * bins — opened on the first chunk's densest window and grown only within that width, as
 * describe_jit's numba kernel caps its table at {@code JIT_CELLS} — and a value whose bin
 * lies outside goes to that (column, sign)'s sparse tail, a hash of (group, bin) to its
 * words. Each partition's dense tables and tails are written merged in bin order as one
 * blob per group (per side, varint bin steps, varint counts, zigzag varint sums: sparse,
 * whatever the span), shuffled by group and merged exactly (int64, {@link Math#addExact}:
 * an overflow raises, never wraps) into per-(group, column, sign) dense tables of at most
 * {@code mergeBins} bins and one sparse tail a group. So the dense memory is at most
 * 2 · columns · cells · stride longs a partition and groups · 2 · columns · mergeBins ·
 * stride longs merged; the tails hold only their distinct (group, column, bin) cells.
 */
public final class BinsAggregator {
    private static final long ABS = 0x7FFFFFFFFFFFFFFFL;
    private static final long MANTISSA = (1L << 52) - 1;
    private static final long NORMAL = 1L << 52;
    private static final long INF_BITS = 0x7FF0000000000000L;

    private BinsAggregator() {
    }

    /**
     * A dense table of bins lo … lo + cap − 1, {@code per} slots a bin (the groups of a
     * bin-major column table, or 1: one group's (column, sign)), stride longs a slot, that
     * grows toward a value's bin only while its span stays within {@code width} bins: a
     * bin it cannot take goes to a {@link Tail}. So its memory is at most
     * width · per · stride longs whatever the values' spread (the numba kernel's
     * {@code JIT_CELLS} cap, describe_jit.py, past which a chunk is counted sparsely).
     */
    static final class Dense implements Serializable {
        int lo;
        int cap;
        long[] d;
        final int per;
        final int stride;
        final int width;

        Dense(int lo, int cap, int per, int stride, int width) {
            this.lo = lo;
            this.cap = cap;
            this.per = per;
            this.stride = stride;
            this.width = width;
            this.d = new long[cap * per * stride];
        }

        /** Whether bin k is inside, growing the table toward it when its span allows. */
        boolean take(int k) {
            int rel = k - lo;
            if (rel >= 0 && rel < cap) {
                return true;
            }
            int hi = lo + cap - 1;
            int nlo = Math.min(lo, k);
            int nhi = Math.max(hi, k);
            if ((long) nhi - nlo + 1 > width) {
                return false;
            }
            int pad = Math.min(Math.max(4, cap / 2), width - (nhi - nlo + 1));
            if (k < lo) {
                nlo -= pad;
            } else {
                nhi += pad;
            }
            int ncap = nhi - nlo + 1;
            long[] nd = new long[ncap * per * stride];
            System.arraycopy(d, 0, nd, (lo - nlo) * per * stride, d.length);
            d = nd;
            lo = nlo;
            cap = ncap;
            return true;
        }

        /** The offset of slot {@code s}'s words in bin index i. */
        int at(int i, int s) {
            return (i * per + s) * stride;
        }
    }

    /**
     * The sparse tail: (high int, bin) keys — (group, bin) of a (column, sign) on the map
     * side, (side, bin) of a group on the merge side — to stride words each, open
     * addressing (keys non-negative, −1 empty). Its memory is its distinct cells', not
     * their bins' span.
     */
    static final class Tail implements Serializable {
        long[] keys;
        long[] d;
        int n;
        int bits;
        final int stride;

        Tail(int stride) {
            this.stride = stride;
            this.bits = 8;
            this.keys = new long[1 << bits];
            Arrays.fill(keys, -1L);
            this.d = new long[(1 << bits) * stride];
        }

        static long key(int high, int k) {
            return ((long) high << 32) | (k & 0xFFFFFFFFL);
        }

        int slot(long x) {
            return (int) ((x * 0x9E3779B97F4A7C15L) >>> (64 - bits));
        }

        /** The offset of key's words, the key added (zero words) when missing. */
        int find(long key) {
            int mask = keys.length - 1;
            int h = slot(key);
            while (true) {
                long c = keys[h];
                if (c == key) {
                    return h * stride;
                }
                if (c == -1L) {
                    if (2 * (n + 1) > keys.length) {
                        rehash();
                        return find(key);
                    }
                    keys[h] = key;
                    n++;
                    return h * stride;
                }
                h = (h + 1) & mask;
            }
        }

        void rehash() {
            long[] ok = keys;
            long[] od = d;
            bits++;
            keys = new long[1 << bits];
            Arrays.fill(keys, -1L);
            d = new long[(1 << bits) * stride];
            int mask = keys.length - 1;
            for (int i = 0; i < ok.length; i++) {
                if (ok[i] != -1L) {
                    int h = slot(ok[i]);
                    while (keys[h] != -1L) {
                        h = (h + 1) & mask;
                    }
                    keys[h] = ok[i];
                    System.arraycopy(od, i * stride, d, h * stride, stride);
                }
            }
        }

        /** Its keys in increasing order (by high int, then bin). */
        long[] sorted() {
            long[] out = new long[n];
            int r = 0;
            for (long k : keys) {
                if (k != -1L) {
                    out[r++] = k;
                }
            }
            Arrays.sort(out);
            return out;
        }

        /** Words added exactly (the merge side). */
        void addExact(long key, long[] words) {
            int at = find(key);
            for (int w = 0; w < stride; w++) {
                d[at + w] = Math.addExact(d[at + w], words[w]);
            }
        }
    }

    /** Receives one (side, bin)'s words, in increasing (side, bin) order. */
    interface Visit {
        void cell(int side, int k, long[] words);
    }

    /**
     * Slot s of {@code dense} (null: none) and the tail entries {@code keys[from .. to)}
     * (their bins in the low int, increasing; null tail: none) merged in bin order, each
     * non-empty bin's words (a bin in both: added) passed to {@code v} as {@code side}'s.
     */
    static void walk(Dense dense, int s, Tail tail, long[] keys, int from, int to, int side,
            long[] words, Visit v) {
        int stride = words.length;
        int cap = dense == null ? 0 : dense.cap;
        int i = 0;
        int q = from;
        while (true) {
            while (i < cap && dense.d[dense.at(i, s)] == 0) {
                i++;
            }
            long kd = i < cap ? dense.lo + i : Long.MAX_VALUE;
            long kt = q < to ? (int) keys[q] : Long.MAX_VALUE;
            if (kd == Long.MAX_VALUE && kt == Long.MAX_VALUE) {
                return;
            }
            long k = Math.min(kd, kt);
            Arrays.fill(words, 0);
            if (kd == k) {
                System.arraycopy(dense.d, dense.at(i, s), words, 0, stride);
                i++;
            }
            if (kt == k) {
                int at = tail.find(keys[q]);
                for (int w = 0; w < stride; w++) {
                    words[w] = Math.addExact(words[w], tail.d[at + w]);
                }
                q++;
            }
            v.cell(side, (int) k, words);
        }
    }

    /** A growable byte buffer with varints. */
    static final class Out {
        byte[] b = new byte[1 << 12];
        int n;

        void ensure(int more) {
            if (n + more > b.length) {
                b = Arrays.copyOf(b, Math.max(b.length * 2, n + more));
            }
        }

        void varint(long v) {
            ensure(10);
            while ((v & ~0x7FL) != 0) {
                b[n++] = (byte) ((v & 0x7F) | 0x80);
                v >>>= 7;
            }
            b[n++] = (byte) v;
        }

        void zigzag(long v) {
            varint((v << 1) ^ (v >> 63));
        }

        byte[] bytes() {
            return Arrays.copyOf(b, n);
        }
    }

    /** Reads what {@link Out} wrote. */
    static final class In {
        final byte[] b;
        int at;

        In(byte[] b) {
            this.b = b;
        }

        long varint() {
            long v = 0;
            int s = 0;
            while (true) {
                byte x = b[at++];
                v |= (long) (x & 0x7F) << s;
                if (x >= 0) {
                    return v;
                }
                s += 7;
            }
        }

        long zigzag() {
            long v = varint();
            return (v >>> 1) ^ -(v & 1);
        }
    }

    /**
     * A blob's writer: per side in order, each non-empty bin as varint (bin − the previous
     * bin, the first's previous −1: always ≥ 1), varint count, zigzag sums; a 0 ends the
     * side. Sparse whatever the bins' span.
     */
    static final class Blob implements Visit {
        final Out o = new Out();
        long prev = -1;

        @Override
        public void cell(int side, int k, long[] words) {
            o.varint(k - prev);
            prev = k;
            o.varint(words[0]);
            for (int w = 1; w < words.length; w++) {
                o.zigzag(words[w]);
            }
        }

        void endSide() {
            o.varint(0);
            prev = -1;
        }
    }

    /**
     * One group's merged statistics: per side a capped dense table (the first bin seen
     * opens it; {@link Dense#take}) and one tail for the bins outside them, keyed
     * (side, bin).
     */
    static final class Merged implements Serializable {
        final Dense[] sides;
        final Tail tail;
        final int width;

        Merged(int sides, int stride, int width) {
            this.sides = new Dense[sides];
            this.tail = new Tail(stride);
            this.width = width;
        }

        void add(int s, int k, long[] words) {
            Dense t = sides[s];
            if (t == null) {
                int cap = Math.min(width, 16);
                t = new Dense(k - Math.min(4, cap - 1), cap, 1, words.length, width);
                sides[s] = t;
            }
            if (t.take(k)) {
                int at = t.at(k - t.lo, 0);
                for (int w = 0; w < words.length; w++) {
                    t.d[at + w] = Math.addExact(t.d[at + w], words[w]);
                }
            } else {
                tail.addExact(Tail.key(s, k), words);
            }
        }

        /** Every non-empty (side, bin) in order. */
        void walkAll(Visit v, int stride) {
            long[] keys = tail.sorted();
            long[] words = new long[stride];
            int q = 0;
            for (int s = 0; s < sides.length; s++) {
                int to = q;
                while (to < keys.length && (keys[to] >>> 32) == s) {
                    to++;
                }
                walk(sides[s], 0, tail, keys, q, to, s, words, v);
                q = to;
            }
        }
    }

    /** Adds a blob of {@link Blob} into merged statistics. */
    static Merged mergeInto(Merged into, byte[] blob, int stride) {
        In in = new In(blob);
        long[] words = new long[stride];
        for (int s = 0; s < into.sides.length; s++) {
            long k = -1;
            while (true) {
                long step = in.varint();
                if (step == 0) {
                    break;
                }
                k += step;
                words[0] = in.varint();
                for (int w = 1; w < stride; w++) {
                    words[w] = in.zigzag();
                }
                into.add(s, (int) k, words);
            }
        }
        return into;
    }

    static Merged mergeMerged(Merged a, Merged b, int stride) {
        b.walkAll((side, k, words) -> a.add(side, k, words), stride);
        return a;
    }

    /** Open addressing: the public groups' values to their indices. */
    static final class GroupIndex implements Serializable {
        final long[] keys;
        final int[] values;
        final boolean[] used;
        final int mask;
        final int bits;

        GroupIndex(long[] groups) {
            int size = Integer.highestOneBit(Math.max(4, groups.length * 4 - 1)) << 1;
            bits = Integer.numberOfTrailingZeros(size);
            keys = new long[size];
            values = new int[size];
            used = new boolean[size];
            mask = size - 1;
            for (int i = 0; i < groups.length; i++) {
                int h = slot(groups[i]);
                while (used[h] && keys[h] != groups[i]) {
                    h = (h + 1) & mask;
                }
                used[h] = true;
                keys[h] = groups[i];
                values[h] = i;
            }
        }

        int slot(long x) {
            return (int) ((x * 0x9E3779B97F4A7C15L) >>> (64 - bits));
        }

        int get(long x) {
            int h = slot(x);
            while (used[h]) {
                if (keys[h] == x) {
                    return values[h];
                }
                h = (h + 1) & mask;
            }
            return -1;
        }
    }

    /**
     * A (column, sign)'s capped bin-major table opened on a chunk's bins {@code ks[0 .. n)}
     * (sorted here): over the window of {@code width} bins that holds most of them — the
     * chunk's bins there with a little room, the table then growing within that width
     * ({@link Dense#take}).
     */
    static Dense open(int[] ks, int n, int groups, int stride, int width) {
        Arrays.sort(ks, 0, n);
        int best = 0;
        int bestEnd = 0;
        int j = 0;
        for (int i = 0; i < n; i++) {
            while (j + 1 < n && (long) ks[j + 1] - ks[i] < width) {
                j++;
            }
            if (j - i > bestEnd - best) {
                best = i;
                bestEnd = j;
            }
            if (j == n - 1) {
                break;
            }
        }
        int lo = ks[best];
        int hi = ks[bestEnd];
        int spare = width - (hi - lo + 1);
        int below = Math.min(4, spare / 2);
        int above = Math.min(4, spare - below);
        return new Dense(lo - below, hi - lo + 1 + below + above, groups, stride, width);
    }

    /**
     * {@link #partition} column by column: the rows buffered a chunk at a time as columns
     * (the group indices and each column's values), then each column of the chunk counted
     * into its own bin-major table over every group — one column's table hot at a time,
     * as the numba kernel does, where a row at a time touches every column's table. Each
     * (column, sign)'s table spans at most {@code width} bins (opened on the first chunk's
     * densest window, {@link #open}); a value outside goes to that (column, sign)'s
     * {@link Tail}, and each group's blob merges the two in bin order. The partition's
     * dense memory is at most 2 · columns · width · groups · stride longs.
     */
    static Iterator<Tuple2<Integer, byte[]>> partitionByColumn(Iterator<InternalRow> rows,
            int groupOrdinal, int groupType, int[] ordinals, int[] types, GroupIndex index,
            int groups, int shift, int zeroBin, int drop, int stride, int chunk, int width) {
        int columns = ordinals.length;
        long top = 1L << (52 - drop);
        Dense[] tables = new Dense[2 * columns];
        Tail[] tails = new Tail[2 * columns];
        int[] group = new int[chunk];
        long[][] bits = new long[columns][chunk];
        int[][] firstBins = {new int[chunk], new int[chunk]};
        boolean[] seen = new boolean[groups];
        boolean more = true;
        while (more) {
            int n = 0;
            while (n < chunk && rows.hasNext()) {
                InternalRow r = rows.next();
                int gi = groupOf(r, groupOrdinal, groupType, index);
                if (gi < 0) {
                    continue;
                }
                seen[gi] = true;
                group[n] = gi;
                for (int j = 0; j < columns; j++) {
                    int o = ordinals[j];
                    // a null as a NaN pattern: skipped below with the non-finite values
                    bits[j][n] = r.isNullAt(o) ? INF_BITS | 1
                            : Double.doubleToRawLongBits(value(r, o, types[j]));
                }
                n++;
            }
            more = rows.hasNext();
            for (int j = 0; j < columns; j++) {
                long[] col = bits[j];
                if (tables[2 * j] == null || tables[2 * j + 1] == null) {
                    int[] found = new int[2];
                    for (int i = 0; i < n; i++) {
                        int side = side(col[i], j);
                        if (side >= 0 && tables[side] == null) {
                            firstBins[side & 1][found[side & 1]++] = bin(col[i], shift, zeroBin);
                        }
                    }
                    for (int h = 0; h < 2; h++) {
                        if (found[h] > 0) {
                            tables[2 * j + h] = open(firstBins[h], found[h], groups, stride,
                                    width);
                        }
                    }
                }
                for (int i = 0; i < n; i++) {
                    int side = side(col[i], j);
                    if (side < 0) {
                        continue;
                    }
                    int k = bin(col[i], shift, zeroBin);
                    long m = significand(col[i], drop, top);
                    Dense t = tables[side];
                    int rel = k - t.lo;
                    if ((rel < 0 || rel >= t.cap) && !t.take(k)) {
                        if (tails[side] == null) {
                            tails[side] = new Tail(stride);
                        }
                        Tail tail = tails[side];
                        int at = tail.find(Tail.key(group[i], k)); // may rehash: first
                        count(tail.d, at, m, stride);
                        continue;
                    }
                    count(t.d, t.at(k - t.lo, group[i]), m, stride);
                }
            }
        }
        long[][] tailKeys = new long[2 * columns][];
        int[] from = new int[2 * columns];
        for (int s = 0; s < 2 * columns; s++) {
            tailKeys[s] = tails[s] == null ? new long[0] : tails[s].sorted();
        }
        long[] words = new long[stride];
        List<Tuple2<Integer, byte[]>> out = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            if (!seen[g]) {
                continue;
            }
            Blob blob = new Blob();
            for (int s = 0; s < 2 * columns; s++) {
                long[] keys = tailKeys[s];
                int q = from[s];
                int to = q;
                while (to < keys.length && (keys[to] >>> 32) == g) {
                    to++;
                }
                walk(tables[s], g, tails[s], keys, q, to, s, words, blob);
                blob.endSide();
                from[s] = to;
            }
            out.add(new Tuple2<>(g, blob.o.bytes()));
        }
        return out.iterator();
    }

    /** Whether the finite pattern b is a negative value's (not −0.0's): its bins lie below
     *  +0.0's bin H, on the column's negative side. */
    static boolean below(long b) {
        return b < 0 && b != Long.MIN_VALUE;
    }

    /** One value of significand m counted into the bin whose words start at d[at]: its
     *  row, m, and (stride 4: a variance) the two 30-bit words of m². */
    static void count(long[] d, int at, long m, int stride) {
        d[at] += 1;
        d[at + 1] += m;
        if (stride > 2) {
            long sq = m * m;
            d[at + 2] += sq >> 30;
            d[at + 3] += sq & 0x3FFFFFFFL;
        }
    }

    /** A column's type codes: how {@link #value} and {@link #groupOf} read it. */
    static final int DOUBLE = 0;
    static final int FLOAT = 1;
    static final int LONG = 2;
    static final int INT = 3;
    static final int SHORT = 4;
    static final int BYTE = 5;
    static final int BOOLEAN = 6;

    /** The types read here, at their codes' indices. */
    static final DataType[] TYPES = {DataTypes.DoubleType, DataTypes.FloatType,
        DataTypes.LongType, DataTypes.IntegerType, DataTypes.ShortType, DataTypes.ByteType,
        DataTypes.BooleanType};

    /** The type code of a numeric or boolean column's type, or −1 (not read here). */
    static int typeCode(DataType t) {
        for (int i = 0; i < TYPES.length; i++) {
            if (t.equals(TYPES[i])) {
                return i;
            }
        }
        return -1;
    }

    /** The non-null value at ordinal o as a double, as the Python pass reads it (a cast
     *  to float64: a long rounded to nearest, a float exact, a boolean 1.0 or 0.0). */
    static double value(InternalRow r, int o, int type) {
        switch (type) {
            case DOUBLE:
                return r.getDouble(o);
            case FLOAT:
                return r.getFloat(o);
            case LONG:
                return (double) r.getLong(o);
            case INT:
                return r.getInt(o);
            case SHORT:
                return r.getShort(o);
            case BYTE:
                return r.getByte(o);
            default:
                return r.getBoolean(o) ? 1.0 : 0.0;
        }
    }

    /** A group value's key in the {@link GroupIndex}: a boolean's 1 or 0, an integer
     *  type's value itself (compared exactly), a double's or a float's float64 bits after
     *  adding 0.0 (−0.0 as 0.0; a float widened exactly) — as the Python pass compares
     *  them: row_kernels.group_index; jvm_bins.group_keys makes the listed keys alike. */
    static long groupKey(InternalRow r, int o, int type) {
        switch (type) {
            case BOOLEAN:
                return r.getBoolean(o) ? 1L : 0L;
            case LONG:
                return r.getLong(o);
            case INT:
                return r.getInt(o);
            case SHORT:
                return r.getShort(o);
            case BYTE:
                return r.getByte(o);
            default:
                return Double.doubleToRawLongBits(value(r, o, type) + 0.0);
        }
    }

    /** The row's group index: 0 for an ungrouped run (ordinal −1), −1 for a null group or
     *  a value not listed. */
    static int groupOf(InternalRow r, int groupOrdinal, int groupType, GroupIndex index) {
        if (groupOrdinal < 0) {
            return 0;
        }
        if (r.isNullAt(groupOrdinal)) {
            return -1;
        }
        return index.get(groupKey(r, groupOrdinal, groupType));
    }

    /** Column j's side of the pattern b: 2j for a negative value (not −0.0), 2j + 1 for
     *  the others, −1 for a non-finite value (or a null's NaN stand-in): skipped. */
    static int side(long b, int j) {
        if ((b & ABS) >= INF_BITS) {
            return -1;
        }
        return 2 * j + (below(b) ? 0 : 1);
    }

    /** The search bin of the finite pattern b: (~b) >> shift for a negative value, else
     *  ((b & ABS) >> shift) + H (describe_jit's definition). */
    static int bin(long b, int shift, int zeroBin) {
        return below(b) ? (int) ((~b) >> shift) : (int) (((b & ABS) >> shift) + zeroBin);
    }

    /** The truncated significand M of the finite pattern b: ((|b| & MANTISSA) >> drop)
     *  with the implicit bit 2^(52 − drop) for a normal value ({@code top}), negated for
     *  b < 0 (describe_jit's definition). */
    static long significand(long b, int drop, long top) {
        long mag = b & ABS;
        long m = (mag & MANTISSA) >>> drop;
        if (mag >= NORMAL) {
            m |= top;
        }
        return b < 0 ? -m : m;
    }

    /** Counts one partition's rows into per-group tables a row at a time (the first
     *  prototype, uncapped: each (group, column, sign) its own growing table): (group
     *  index, blob) pairs. */
    static Iterator<Tuple2<Integer, byte[]>> partition(Iterator<InternalRow> rows,
            int groupOrdinal, int groupType, int[] ordinals, int[] types, GroupIndex index,
            int groups, int shift, int zeroBin, int drop, int stride) {
        int columns = ordinals.length;
        long top = 1L << (52 - drop);
        Dense[][] tables = new Dense[groups][];
        while (rows.hasNext()) {
            InternalRow r = rows.next();
            int gi = groupOf(r, groupOrdinal, groupType, index);
            if (gi < 0) {
                continue;
            }
            Dense[] cs = tables[gi];
            if (cs == null) {
                cs = new Dense[2 * columns];
                tables[gi] = cs;
            }
            for (int j = 0; j < columns; j++) {
                int o = ordinals[j];
                if (r.isNullAt(o)) {
                    continue;
                }
                long b = Double.doubleToRawLongBits(value(r, o, types[j]));
                int side = side(b, j);
                if (side >= 0) {
                    int k = bin(b, shift, zeroBin);
                    if (cs[side] == null) {
                        cs[side] = new Dense(k - 8, 32, 1, stride, Integer.MAX_VALUE);
                    }
                    cs[side].take(k);
                    count(cs[side].d, cs[side].at(k - cs[side].lo, 0),
                            significand(b, drop, top), stride);
                }
            }
        }
        List<Tuple2<Integer, byte[]>> out = new ArrayList<>();
        long[] words = new long[stride];
        for (int g = 0; g < groups; g++) {
            if (tables[g] != null) {
                Blob blob = new Blob();
                for (int s = 0; s < 2 * columns; s++) {
                    walk(tables[g][s], 0, null, null, 0, 0, s, words, blob);
                    blob.endSide();
                }
                out.add(new Tuple2<>(g, blob.o.bytes()));
                tables[g] = null;
            }
        }
        return out.iterator();
    }

    /** The count's inputs read from {@code dataset}'s schema: the group column's ordinal
     *  and type code (−1, −1: ungrouped, a null name), each column's ordinal and code. */
    static final class Input implements Serializable {
        final int groupOrdinal;
        final int groupType;
        final int[] ordinals;
        final int[] types;

        Input(StructType schema, String groupColumn, String[] columns) {
            if (groupColumn == null) {
                groupOrdinal = -1;
                groupType = -1;
            } else {
                groupOrdinal = schema.fieldIndex(groupColumn);
                groupType = typeCode(schema.fields()[groupOrdinal].dataType());
                if (groupType < 0) {
                    throw new IllegalArgumentException(
                            "the JVM count reads a numeric or boolean group column");
                }
            }
            ordinals = new int[columns.length];
            types = new int[columns.length];
            for (int j = 0; j < columns.length; j++) {
                ordinals[j] = schema.fieldIndex(columns[j]);
                types[j] = typeCode(schema.fields()[ordinals[j]].dataType());
                if (types[j] < 0) {
                    throw new IllegalArgumentException(
                            "the JVM count reads numeric or boolean columns");
                }
            }
        }
    }

    /** The version of this kernel: dprect's Python side
     *  (dprect.engines.spark.jvm_bins.VERSION) uses the class only when they agree. */
    public static final int VERSION = 2;

    /** {@link #VERSION}, for the Python side's check through py4j. */
    public static int version() {
        return VERSION;
    }

    /** Each partition's (group index, blob) pairs: counted a chunk at a time column by
     *  column (chunk &gt; 0: {@link #partitionByColumn}) or a row at a time (0). */
    static JavaPairRDD<Integer, byte[]> partials(JavaRDD<InternalRow> rows, Input in,
            GroupIndex index, int g, int shift, int zeroBin, int drop, int stride, int chunk,
            int width) {
        return rows.mapPartitionsToPair(
                it -> chunk == 0
                        ? partition(it, in.groupOrdinal, in.groupType, in.ordinals, in.types,
                                index, g, shift, zeroBin, drop, stride)
                        : partitionByColumn(it, in.groupOrdinal, in.groupType, in.ordinals,
                                in.types, index, g, shift, zeroBin, drop, stride, chunk,
                                width));
    }

    /** The partial blobs merged exactly per group on {@code reducers} partitions. */
    static JavaPairRDD<Integer, Merged> merged(JavaPairRDD<Integer, byte[]> partial, int sides,
            int stride, int mergedWidth, int reducers) {
        return partial.combineByKey(
                blob -> mergeInto(new Merged(sides, stride, mergedWidth), blob, stride),
                (acc, blob) -> mergeInto(acc, blob, stride),
                (a, b) -> mergeMerged(a, b, stride),
                new HashPartitioner(reducers), false, null);
    }

    /**
     * The product's entry (dprect.engines.spark.jvm_bins.merged_cells): describe's search
     * bins of every listed group and column of {@code dataset} (a classic Dataset: the
     * pass's input) counted and merged in the JVM, as a Dataset — not yet run — of one
     * row per (group, column) with values: {@code g} int (the group's index in
     * {@code groups}: the listed values' keys, {@link #groupKey}; a null group column name:
     * one group, 0), {@code c} int (the column's index in {@code columns}), {@code b}
     * binary: little-endian int64 rows (bin, count, sum of M[, sum of M²'s high 30-bit
     * word, of its low word]) in increasing bin order. The same rows, cell for cell, as
     * the Python pass's column_lists (benchmarks/aggregate_jvm_side.py --check,
     * tests/spark/test_jvm_bins.py).
     */
    public static Dataset<Row> cells(Object dataset, String groupColumn, String[] columns,
            long[] groups, int shift, int zeroBin, int drop, boolean squares, int reducers,
            int cells, int mergeBins) {
        org.apache.spark.sql.classic.Dataset<?> ds = (org.apache.spark.sql.classic.Dataset<?>) dataset;
        Input in = new Input(ds.schema(), groupColumn, columns);
        final GroupIndex index = new GroupIndex(groups);
        final int g = groupColumn == null ? 1 : groups.length;
        final int stride = squares ? 4 : 2;
        final int width = Math.max(1, cells / Math.max(1, g));
        JavaRDD<InternalRow> rows = ds.queryExecution().toRdd().toJavaRDD();
        JavaPairRDD<Integer, Merged> merged = merged(
                partials(rows, in, index, g, shift, zeroBin, drop, stride, 1 << 14, width),
                2 * columns.length, stride, Math.max(1, mergeBins), reducers);
        JavaRDD<Row> out = merged.flatMap(t -> {
            List<Row> got = new ArrayList<>();
            int group = t._1();
            int[] column = {-1};
            ByteBuffer[] buf = {ByteBuffer.allocate(1 << 12).order(ByteOrder.LITTLE_ENDIAN)};
            t._2().walkAll((side, k, words) -> {
                int c = side >> 1;
                if (c != column[0]) {
                    if (column[0] >= 0) {
                        got.add(RowFactory.create(group, column[0],
                                Arrays.copyOf(buf[0].array(), buf[0].position())));
                    }
                    column[0] = c;
                    buf[0].clear();
                }
                if (buf[0].remaining() < 8 * (1 + stride)) {
                    ByteBuffer more = ByteBuffer.allocate(2 * buf[0].capacity())
                            .order(ByteOrder.LITTLE_ENDIAN);
                    more.put(buf[0].array(), 0, buf[0].position());
                    buf[0] = more;
                }
                buf[0].putLong(k);
                for (long w : words) {
                    buf[0].putLong(w);
                }
            }, stride);
            if (column[0] >= 0) {
                got.add(RowFactory.create(group, column[0],
                        Arrays.copyOf(buf[0].array(), buf[0].position())));
            }
            return got.iterator();
        });
        StructType schema = new StructType(new StructField[] {
            DataTypes.createStructField("g", DataTypes.IntegerType, false),
            DataTypes.createStructField("c", DataTypes.IntegerType, false),
            DataTypes.createStructField("b", DataTypes.BinaryType, false)});
        return ds.sparkSession().createDataFrame(out, schema);
    }

    /**
     * The benchmark's entry (benchmarks/aggregate_jvm_side.py): the count over
     * {@code dataset} (a classic Dataset: the pass's input; group keys as
     * {@link #cells} reads them). Returns,
     * little-endian int64: with {@code collect}, every non-empty (group index, column, bin,
     * count, sum of M[, sum of M²'s high word, of its low word]) in (group, column, bin)
     * order; without, one word: the number of non-empty (group, column, bin) cells.
     * {@code part} splits its cost: "read" reads every row's group and values as the count
     * does (one word: the XOR of the values' bits), "partial" counts each partition's
     * tables and writes their blobs (one word: the blobs' bytes, no shuffle), "all" the
     * whole count; "rowspartial", "rowsall": the same with each row's values counted into
     * per-(group, column, sign) tables a row at a time (the first prototype, uncapped; the
     * default counts a chunk of rows column by column into capped tables).
     * {@code cells}: a column-by-column (column, sign) table's most (bin, group) cells —
     * its bins' span is at most max(1, cells / groups); {@code mergeBins}: the most bins of
     * a merged (group, column, sign)'s dense table; past either, the bins are kept sparse.
     */
    public static byte[] run(Object dataset, String groupColumn, String[] columns, long[] groups,
            int shift, int zeroBin, int drop, boolean squares, int reducers, boolean collect,
            String part, int cells, int mergeBins) {
        org.apache.spark.sql.classic.Dataset<?> ds = (org.apache.spark.sql.classic.Dataset<?>) dataset;
        Input in = new Input(ds.schema(), groupColumn, columns);
        final GroupIndex index = new GroupIndex(groups);
        final int g = groups.length;
        final int stride = squares ? 4 : 2;
        final int sides = 2 * columns.length;
        final int width = Math.max(1, cells / Math.max(1, g));
        final int mergedWidth = Math.max(1, mergeBins);
        JavaRDD<InternalRow> rows = ds.queryExecution().toRdd().toJavaRDD();
        if (part.equals("read")) {
            long x = rows.mapPartitions(it -> {
                long acc = 0;
                while (it.hasNext()) {
                    InternalRow r = it.next();
                    acc ^= groupOf(r, in.groupOrdinal, in.groupType, index);
                    for (int j = 0; j < in.ordinals.length; j++) {
                        if (!r.isNullAt(in.ordinals[j])) {
                            acc ^= Double.doubleToRawLongBits(value(r, in.ordinals[j],
                                    in.types[j]));
                        }
                    }
                }
                return List.of(acc).iterator();
            }).reduce((a, b) -> a ^ b);
            return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(x).array();
        }
        final int chunk = part.startsWith("rows") ? 0 : 1 << 14;
        final String stage = part.startsWith("rows") ? part.substring(4) : part;
        JavaPairRDD<Integer, byte[]> partial = partials(rows, in, index, g, shift, zeroBin,
                drop, stride, chunk, width);
        if (stage.equals("partial")) {
            long bytes = partial.map(t -> (long) t._2().length).reduce(Long::sum);
            return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(bytes).array();
        }
        JavaPairRDD<Integer, Merged> merged = merged(partial, sides, stride, mergedWidth,
                reducers);
        if (!collect) {
            long found = merged.map(t -> {
                long[] n = new long[1];
                t._2().walkAll((side, k, words) -> n[0]++, stride);
                return n[0];
            }).reduce(Long::sum);
            return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(found).array();
        }
        List<Tuple2<Integer, Merged>> all = new ArrayList<>(merged.collect());
        all.sort((a, b) -> Integer.compare(a._1(), b._1()));
        List<long[]> out = new ArrayList<>();
        for (Tuple2<Integer, Merged> t : all) {
            int group = t._1();
            t._2().walkAll((side, k, words) -> {
                long[] e = new long[3 + stride];
                e[0] = group;
                e[1] = side >> 1;
                e[2] = k;
                System.arraycopy(words, 0, e, 3, stride);
                out.add(e);
            }, stride);
        }
        ByteBuffer buf = ByteBuffer.allocate(out.size() * (3 + stride) * 8)
                .order(ByteOrder.LITTLE_ENDIAN);
        for (long[] e : out) {
            for (long v : e) {
                buf.putLong(v);
            }
        }
        return buf.array();
    }
}
