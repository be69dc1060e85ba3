package dprectbench;

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
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;

/**
 * A measure-only prototype (issue #41, benchmarks/aggregate_jvm_side.py's {@code jvmbins}):
 * the describe pass's sufficient statistics counted in the JVM, with no hand-over to Python.
 *
 * <p>Per row: ONE hash lookup (the row's public group, an open-addressing long to int map),
 * then per column the value's IEEE bits b ({@link Double#doubleToRawLongBits}) give its
 * search bin — ((b &amp; ABS) &gt;&gt; shift) + H for b &ge; 0 or −0.0, (~b) &gt;&gt; shift
 * for any other negative b (FloatBins' unsigned order key &gt;&gt; shift) — and its truncated
 * significand M = ((|b| &amp; MANTISSA) &gt;&gt; drop) | [|b| &ge; 2^52]·2^(52 − drop),
 * negated for b &lt; 0 (dprect/engines/spark/describe_jit.py's definitions); the bin's row
 * count and the sum of M (and, with {@code squares}, of the high and low 30-bit words of
 * M²) are added in place in a dense table of that (group, column, sign): a growable range
 * of bins, count and sums side by side. Non-finite and null values are skipped (the pass
 * counts finite values), rows of a group outside the public list are dropped.
 *
 * <p>Each partition's tables are written as one compact blob per group (varint counts,
 * zigzag varint sums over each table's non-empty range), shuffled by group and merged
 * exactly (int64, {@link Math#addExact}: an overflow raises, never wraps).
 */
public final class BinsAggregator {
    private static final long ABS = 0x7FFFFFFFFFFFFFFFL;
    private static final long MANTISSA = (1L << 52) - 1;
    private static final long NORMAL = 1L << 52;
    private static final long INF_BITS = 0x7FF0000000000000L;

    private BinsAggregator() {
    }

    /** One (group, column, sign)'s dense table: bins lo .. lo + cap − 1, stride longs each. */
    static final class Cell implements Serializable, Bins {
        int lo;
        long[] d;
        final int stride;

        Cell(int k, int stride) {
            this.stride = stride;
            this.lo = k - 8;
            this.d = new long[32 * stride];
        }

        @Override
        public int lo() {
            return lo;
        }

        @Override
        public int cap() {
            return d.length / stride;
        }

        @Override
        public long word(int i, int w) {
            return d[i * stride + w];
        }

        void grow(int k) {
            int cap = cap();
            int pad = Math.max(8, cap / 2);
            int nlo = Math.min(lo, k - pad);
            int nhi = Math.max(lo + cap - 1, k + pad);
            long[] nd = new long[(nhi - nlo + 1) * stride];
            System.arraycopy(d, 0, nd, (lo - nlo) * stride, d.length);
            d = nd;
            lo = nlo;
        }

        void add(int k, long m) {
            int i = k - lo;
            if (i < 0 || i >= d.length / stride) {
                grow(k);
                i = k - lo;
            }
            count(d, i * stride, m, stride);
        }

        void addExact(int k, long[] words) {
            int i = k - lo;
            if (i < 0 || i >= d.length / stride) {
                grow(k);
                i = k - lo;
            }
            int at = i * stride;
            for (int w = 0; w < stride; w++) {
                d[at + w] = Math.addExact(d[at + w], words[w]);
            }
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

    /** One (column, sign)'s bins as a blob writes them: bins lo() … lo() + cap() − 1,
     *  word w of bin i (word 0 its count, then the sums). */
    interface Bins {
        int lo();

        int cap();

        long word(int i, int w);
    }

    /** One group's tables: sides[2·column + side] (side 0 negative, 1 the others; null:
     *  none), each its count-holding bins' span [first, last] with every bin's words. */
    static byte[] encode(Bins[] sides, int stride) {
        Out o = new Out();
        for (Bins c : sides) {
            int first = -1;
            int last = -1;
            if (c != null) {
                int cap = c.cap();
                for (int i = 0; i < cap; i++) {
                    if (c.word(i, 0) > 0) {
                        if (first < 0) {
                            first = i;
                        }
                        last = i;
                    }
                }
            }
            if (first < 0) {
                o.varint(0);
                continue;
            }
            o.varint(last - first + 1);
            o.zigzag(c.lo() + first);
            for (int i = first; i <= last; i++) {
                long n = c.word(i, 0);
                o.varint(n);
                if (n > 0) {
                    for (int w = 1; w < stride; w++) {
                        o.zigzag(c.word(i, w));
                    }
                }
            }
        }
        return o.bytes();
    }

    /** Adds a blob of {@link #encode} into merged tables. */
    static Cell[] mergeInto(Cell[] into, byte[] blob, int stride) {
        In in = new In(blob);
        long[] words = new long[stride];
        for (int s = 0; s < into.length; s++) {
            int len = (int) in.varint();
            if (len == 0) {
                continue;
            }
            int first = (int) in.zigzag();
            for (int i = 0; i < len; i++) {
                long n = in.varint();
                if (n == 0) {
                    continue;
                }
                words[0] = n;
                for (int w = 1; w < stride; w++) {
                    words[w] = in.zigzag();
                }
                if (into[s] == null) {
                    into[s] = new Cell(first + i, stride);
                }
                into[s].addExact(first + i, words);
            }
        }
        return into;
    }

    static Cell[] mergeCells(Cell[] a, Cell[] b, int stride) {
        long[] words = new long[stride];
        for (int s = 0; s < a.length; s++) {
            Cell c = b[s];
            if (c == null) {
                continue;
            }
            for (int i = 0; i < c.cap(); i++) {
                if (c.d[i * stride] == 0) {
                    continue;
                }
                System.arraycopy(c.d, i * stride, words, 0, stride);
                if (a[s] == null) {
                    a[s] = new Cell(c.lo + i, stride);
                }
                a[s].addExact(c.lo + i, words);
            }
        }
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
     * One (column, sign)'s dense table over every group, bin-major (a bin's groups side by
     * side, as describe_jit's numba kernel lays it out: rows crowd into few bins, so the
     * writes stay in a small part of it): bins lo .. lo + cap − 1, G·stride longs each.
     */
    static final class ColumnTable {
        int lo;
        int cap;
        long[] d;
        final int groups;
        final int stride;

        ColumnTable(int k, int groups, int stride) {
            this.groups = groups;
            this.stride = stride;
            this.lo = k - 4;
            this.cap = 16;
            this.d = new long[cap * groups * stride];
        }

        /** Group g's bins of this table, as {@link #encode} reads them. */
        Bins of(int g) {
            return new Bins() {
                @Override
                public int lo() {
                    return lo;
                }

                @Override
                public int cap() {
                    return cap;
                }

                @Override
                public long word(int i, int w) {
                    return d[(i * groups + g) * stride + w];
                }
            };
        }

        void grow(int k) {
            int pad = Math.max(4, cap / 2);
            int nlo = Math.min(lo, k - pad);
            int nhi = Math.max(lo + cap - 1, k + pad);
            int ncap = nhi - nlo + 1;
            long[] nd = new long[ncap * groups * stride];
            System.arraycopy(d, 0, nd, (lo - nlo) * groups * stride, d.length);
            d = nd;
            lo = nlo;
            cap = ncap;
        }
    }

    /** One group's tables of {@link ColumnTable}s in {@link #encode}'s format. */
    static byte[] encodeGroup(ColumnTable[] tables, int g, int stride) {
        Bins[] sides = new Bins[tables.length];
        for (int s = 0; s < tables.length; s++) {
            sides[s] = tables[s] == null ? null : tables[s].of(g);
        }
        return encode(sides, stride);
    }

    /**
     * {@link #partition} column by column: the rows buffered a chunk at a time as columns
     * (the group indices and each column's values), then each column of the chunk counted
     * into its own bin-major table over every group — one column's table hot at a time,
     * as the numba kernel does, where a row at a time touches every column's table.
     */
    static Iterator<Tuple2<Integer, byte[]>> partitionByColumn(Iterator<InternalRow> rows,
            int groupOrdinal, boolean groupIsInt, int[] ordinals, GroupIndex index,
            int groups, int shift, int zeroBin, int drop, int stride, int chunk) {
        int columns = ordinals.length;
        long top = 1L << (52 - drop);
        ColumnTable[] tables = new ColumnTable[2 * columns];
        int[] group = new int[chunk];
        long[][] bits = new long[columns][chunk];
        boolean[] seen = new boolean[groups];
        boolean more = true;
        while (more) {
            int n = 0;
            while (n < chunk && rows.hasNext()) {
                InternalRow r = rows.next();
                int gi = groupOf(r, groupOrdinal, groupIsInt, index);
                if (gi < 0) {
                    continue;
                }
                seen[gi] = true;
                group[n] = gi;
                for (int j = 0; j < columns; j++) {
                    int o = ordinals[j];
                    // a null as a NaN pattern: skipped below with the non-finite values
                    bits[j][n] = r.isNullAt(o) ? INF_BITS | 1
                            : Double.doubleToRawLongBits(r.getDouble(o));
                }
                n++;
            }
            more = rows.hasNext();
            for (int j = 0; j < columns; j++) {
                long[] col = bits[j];
                for (int i = 0; i < n; i++) {
                    int side = side(col[i], j);
                    if (side < 0) {
                        continue;
                    }
                    int k = bin(col[i], shift, zeroBin);
                    long m = significand(col[i], drop, top);
                    if (tables[side] == null) {
                        tables[side] = new ColumnTable(k, groups, stride);
                    }
                    ColumnTable t = tables[side];
                    int rel = k - t.lo;
                    if (rel < 0 || rel >= t.cap) {
                        t.grow(k);
                        rel = k - t.lo;
                    }
                    count(t.d, (rel * groups + group[i]) * stride, m, stride);
                }
            }
        }
        List<Tuple2<Integer, byte[]>> out = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            if (seen[g]) {
                out.add(new Tuple2<>(g, encodeGroup(tables, g, stride)));
            }
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

    /** The row's group index: −1 for a null group or a value not listed. */
    static int groupOf(InternalRow r, int groupOrdinal, boolean groupIsInt, GroupIndex index) {
        if (r.isNullAt(groupOrdinal)) {
            return -1;
        }
        return index.get(groupIsInt ? r.getInt(groupOrdinal) : r.getLong(groupOrdinal));
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

    /** Counts one partition's rows into per-group tables: (group index, blob) pairs. */
    static Iterator<Tuple2<Integer, byte[]>> partition(Iterator<InternalRow> rows,
            int groupOrdinal, boolean groupIsInt, int[] ordinals, GroupIndex index,
            int groups, int shift, int zeroBin, int drop, int stride) {
        int columns = ordinals.length;
        long top = 1L << (52 - drop);
        Cell[][] tables = new Cell[groups][];
        while (rows.hasNext()) {
            InternalRow r = rows.next();
            int gi = groupOf(r, groupOrdinal, groupIsInt, index);
            if (gi < 0) {
                continue;
            }
            Cell[] cs = tables[gi];
            if (cs == null) {
                cs = new Cell[2 * columns];
                tables[gi] = cs;
            }
            for (int j = 0; j < columns; j++) {
                int o = ordinals[j];
                if (r.isNullAt(o)) {
                    continue;
                }
                long b = Double.doubleToRawLongBits(r.getDouble(o));
                int side = side(b, j);
                if (side >= 0) {
                    int k = bin(b, shift, zeroBin);
                    if (cs[side] == null) {
                        cs[side] = new Cell(k, stride);
                    }
                    cs[side].add(k, significand(b, drop, top));
                }
            }
        }
        List<Tuple2<Integer, byte[]>> out = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            if (tables[g] != null) {
                out.add(new Tuple2<>(g, encode(tables[g], stride)));
                tables[g] = null;
            }
        }
        return out.iterator();
    }

    /**
     * Runs the count over {@code dataset} (a classic Dataset: the pass's input). Returns,
     * little-endian int64: with {@code collect}, every non-empty (group index, column, bin,
     * count, sum of M[, sum of M²'s high word, of its low word]) in (group, column, bin)
     * order; without, one word: the number of non-empty (group, column, bin) cells.
     */
    public static byte[] run(Object dataset, String groupColumn, String[] columns, long[] groups,
            int shift, int zeroBin, int drop, boolean squares, int reducers, boolean collect) {
        return run(dataset, groupColumn, columns, groups, shift, zeroBin, drop, squares,
                reducers, collect, "all");
    }

    /**
     * {@link #run} up to a stage, for the split of its cost: {@code part} "read" reads
     * every row's group and values as the count does (one word: the XOR of the values'
     * bits), "partial" counts each partition's tables and writes their blobs (one word:
     * the blobs' bytes, no shuffle), "all" is {@link #run}; "rowspartial", "rowsall": the
     * same with each row's values counted into per-(group, column, sign) tables a row at a
     * time (the first prototype; the default counts a chunk of rows column by column).
     */
    public static byte[] run(Object dataset, String groupColumn, String[] columns, long[] groups,
            int shift, int zeroBin, int drop, boolean squares, int reducers, boolean collect,
            String part) {
        org.apache.spark.sql.classic.Dataset<?> ds = (org.apache.spark.sql.classic.Dataset<?>) dataset;
        StructType schema = ds.schema();
        int groupOrdinal = schema.fieldIndex(groupColumn);
        DataType gt = schema.fields()[groupOrdinal].dataType();
        boolean groupIsInt = gt.equals(DataTypes.IntegerType);
        if (!groupIsInt && !gt.equals(DataTypes.LongType)) {
            throw new IllegalArgumentException("the prototype reads an int or long group column");
        }
        int[] ordinals = new int[columns.length];
        for (int j = 0; j < columns.length; j++) {
            ordinals[j] = schema.fieldIndex(columns[j]);
            if (!schema.fields()[ordinals[j]].dataType().equals(DataTypes.DoubleType)) {
                throw new IllegalArgumentException("the prototype reads double columns");
            }
        }
        final GroupIndex index = new GroupIndex(groups);
        final int g = groups.length;
        final int stride = squares ? 4 : 2;
        final int cells = 2 * columns.length;
        JavaRDD<InternalRow> rows = ds.queryExecution().toRdd().toJavaRDD();
        if (part.equals("read")) {
            long x = rows.mapPartitions(it -> {
                long acc = 0;
                while (it.hasNext()) {
                    InternalRow r = it.next();
                    acc ^= groupIsInt ? r.getInt(groupOrdinal) : r.getLong(groupOrdinal);
                    for (int o : ordinals) {
                        if (!r.isNullAt(o)) {
                            acc ^= Double.doubleToRawLongBits(r.getDouble(o));
                        }
                    }
                }
                return List.of(acc).iterator();
            }).reduce((a, b) -> a ^ b);
            return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(x).array();
        }
        final int chunk = part.startsWith("rows") ? 0 : 1 << 14;
        final String stage = part.startsWith("rows") ? part.substring(4) : part;
        JavaPairRDD<Integer, byte[]> partial = rows.mapPartitionsToPair(
                it -> chunk == 0
                        ? partition(it, groupOrdinal, groupIsInt, ordinals, index, g, shift,
                                zeroBin, drop, stride)
                        : partitionByColumn(it, groupOrdinal, groupIsInt, ordinals, index, g,
                                shift, zeroBin, drop, stride, chunk));
        if (stage.equals("partial")) {
            long bytes = partial.map(t -> (long) t._2().length).reduce(Long::sum);
            return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(bytes).array();
        }
        JavaPairRDD<Integer, Cell[]> merged = partial.combineByKey(
                blob -> mergeInto(new Cell[cells], blob, stride),
                (acc, blob) -> mergeInto(acc, blob, stride),
                (a, b) -> mergeCells(a, b, stride),
                new HashPartitioner(reducers), false, null);
        if (!collect) {
            long found = merged.map(t -> {
                long n = 0;
                for (Cell c : t._2()) {
                    if (c != null) {
                        for (int i = 0; i < c.cap(); i++) {
                            if (c.d[i * stride] > 0) {
                                n++;
                            }
                        }
                    }
                }
                return n;
            }).reduce(Long::sum);
            return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(found).array();
        }
        List<Tuple2<Integer, Cell[]>> all = new ArrayList<>(merged.collect());
        all.sort((a, b) -> Integer.compare(a._1(), b._1()));
        List<long[]> out = new ArrayList<>();
        for (Tuple2<Integer, Cell[]> t : all) {
            for (int j = 0; j < columns.length; j++) {
                for (int side = 0; side < 2; side++) {
                    Cell c = t._2()[2 * j + side];
                    if (c == null) {
                        continue;
                    }
                    for (int i = 0; i < c.cap(); i++) {
                        if (c.d[i * stride] == 0) {
                            continue;
                        }
                        long[] e = new long[3 + stride];
                        e[0] = t._1();
                        e[1] = j;
                        e[2] = c.lo + i;
                        System.arraycopy(c.d, i * stride, e, 3, stride);
                        out.add(e);
                    }
                }
            }
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
