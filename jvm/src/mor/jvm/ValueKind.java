package mor.jvm;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * How an equality column's values are compared: data values (Spark's) and deleted values
 * (Parquet's) are both turned into one Java object per kind, so a widened column (int read as
 * bigint, decimal(9,2) as decimal(18,2)) still matches the keys an older delete file wrote:
 * integers and dates and timestamps as Long, strings as UTF8String, binary as ByteBuffer,
 * decimals as their unscaled BigInteger, booleans as Boolean. A null is null.
 */
final class ValueKind implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  private enum Code { BYTE, SHORT, INT, LONG, STRING, BINARY, BOOLEAN, DECIMAL }

  private final Code code;
  private final int precision;
  private final int scale;

  private ValueKind(Code code, int precision, int scale) {
    this.code = code;
    this.precision = precision;
    this.scale = scale;
  }

  static ValueKind of(DataType t) {
    if (t instanceof ByteType) return new ValueKind(Code.BYTE, 0, 0);
    if (t instanceof ShortType) return new ValueKind(Code.SHORT, 0, 0);
    if (t instanceof IntegerType || t instanceof DateType) return new ValueKind(Code.INT, 0, 0);
    if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) return new ValueKind(Code.LONG, 0, 0);
    if (t instanceof StringType) return new ValueKind(Code.STRING, 0, 0);
    if (t instanceof BinaryType) return new ValueKind(Code.BINARY, 0, 0);
    if (t instanceof BooleanType) return new ValueKind(Code.BOOLEAN, 0, 0);
    if (t instanceof DecimalType) {
      DecimalType d = (DecimalType) t;
      return new ValueKind(Code.DECIMAL, d.precision(), d.scale());
    }
    throw new UnsupportedOperationException("mor compares no equality delete column of type " + t.simpleString());
  }

  /** The value of argument {@code ordinal} of a row Spark passes in. */
  Object fromRow(InternalRow row, int ordinal) {
    if (row.isNullAt(ordinal)) return null;
    switch (code) {
      case BYTE: return (long) row.getByte(ordinal);
      case SHORT: return (long) row.getShort(ordinal);
      case INT: return (long) row.getInt(ordinal);
      case LONG: return row.getLong(ordinal);
      case STRING: return row.getUTF8String(ordinal);
      case BINARY: return ByteBuffer.wrap(row.getBinary(ordinal));
      case BOOLEAN: return row.getBoolean(ordinal);
      default: return row.getDecimal(ordinal, precision, scale).toJavaBigDecimal().setScale(scale).unscaledValue();
    }
  }

  /** The value of field {@code field} of a delete file's record, stored as {@code type}. */
  Object fromParquet(Group record, int field, PrimitiveType type) {
    if (record.getFieldRepetitionCount(field) == 0) return null;
    switch (code) {
      case STRING: return UTF8String.fromBytes(record.getBinary(field, 0).getBytes());
      case BINARY: return ByteBuffer.wrap(record.getBinary(field, 0).getBytes());
      case BOOLEAN: return record.getBoolean(field, 0);
      case DECIMAL:
        switch (type.getPrimitiveTypeName()) {
          case INT32: return BigInteger.valueOf(record.getInteger(field, 0));
          case INT64: return BigInteger.valueOf(record.getLong(field, 0));
          default:
            Binary bytes = record.getBinary(field, 0);
            return new BigInteger(bytes.getBytes());
        }
      default:
        switch (type.getPrimitiveTypeName()) {
          case INT32: return (long) record.getInteger(field, 0);
          case INT64: return record.getLong(field, 0);
          default:
            throw new UnsupportedOperationException("an equality delete column stored as " + type + " is not an integer");
        }
    }
  }
}
