import { describe, expect, it } from 'vitest';
import { cellText, isIsoDate, typeCell } from './cells.js';

describe('typeCell', () => {
  it('types numbers, booleans and empties, and keeps identifiers and lossy numbers as text', () => {
    const cases = [
      '', '0', '42', '-7', '3.14', '-0.5', '1.50', '1e3', '2.5E-3', '-0', '-0.0',
      '007', '-007', '00', '02134', '0.5', '0e1',
      '9007199254740991', '9007199254740993', '12345678901234567890', '123456789012345.6', '0.1234567890123456789', '1.000000000000000000',
      '1e999', '+5', '.5', '5.', '1,234', '0x1F', 'NaN', 'Infinity', ' 42', '42 ', '1e', '1e+', '--1', '-',
      'true', 'TRUE', 'True', 'false', 'FALSE', 'False', 'tRue', 'yes', 'null',
    ];
    expect(Object.fromEntries(cases.map((c) => [c, typeCell(c)]))).toStrictEqual({
      '': null, '0': 0, '42': 42, '-7': -7, '3.14': 3.14, '-0.5': -0.5, '1.50': 1.5, '1e3': 1000, '2.5E-3': 0.0025, '-0': '-0', '-0.0': '-0.0',
      '007': '007', '-007': '-007', '00': '00', '02134': '02134', '0.5': 0.5, '0e1': 0,
      '9007199254740991': 9007199254740991, '9007199254740993': '9007199254740993', '12345678901234567890': '12345678901234567890',
      '123456789012345.6': '123456789012345.6', '0.1234567890123456789': '0.1234567890123456789', '1.000000000000000000': 1,
      '1e999': '1e999', '+5': '+5', '.5': '.5', '5.': '5.', '1,234': '1,234', '0x1F': '0x1F', 'NaN': 'NaN', 'Infinity': 'Infinity',
      ' 42': ' 42', '42 ': '42 ', '1e': '1e', '1e+': '1e+', '--1': '--1', '-': '-',
      true: true, TRUE: true, True: true, false: false, FALSE: false, False: false, tRue: 'tRue', yes: 'yes', null: 'null',
    });
  });
});

describe('isIsoDate', () => {
  it('accepts real ISO 8601 dates and date-times only', () => {
    const cases = [
      '2024-02-29', '2023-02-29', '2024-13-01', '2024-00-10', '2024-04-31', '2024-1-1', '2024/01/01',
      '2024-01-01T10:00', '2024-01-01 10:00:59', '2024-01-01T10:00:00Z', '2024-01-01T10:00:00.123+05:30', '2024-01-01T10:00:00-0800',
      '2024-01-01T25:00', '2024-01-01T10:60', '2024-01-01T10:00:60', '2024-01-01T10:00Zx', '2024-01-01T', '2024-01-01x',
    ];
    expect(Object.fromEntries(cases.map((c) => [c, isIsoDate(c)]))).toStrictEqual({
      '2024-02-29': true, '2023-02-29': false, '2024-13-01': false, '2024-00-10': false, '2024-04-31': false, '2024-1-1': false, '2024/01/01': false,
      '2024-01-01T10:00': true, '2024-01-01 10:00:59': true, '2024-01-01T10:00:00Z': true, '2024-01-01T10:00:00.123+05:30': true, '2024-01-01T10:00:00-0800': true,
      '2024-01-01T25:00': false, '2024-01-01T10:60': false, '2024-01-01T10:00:60': false, '2024-01-01T10:00Zx': false, '2024-01-01T': false, '2024-01-01x': false,
    });
  });
});

describe('cellText', () => {
  it('writes null as empty, scalars as JSON, nested values as JSON text', () => {
    expect([null, undefined, 'a', 1.5, false, { a: [1] }, [1, 'x']].map(cellText)).toStrictEqual(['', '', 'a', '1.5', 'false', '{"a":[1]}', '[1,"x"]']);
  });
});
