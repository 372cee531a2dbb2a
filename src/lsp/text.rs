//! Places in a document: byte offsets (what the validator's source maps give) to and from LSP
//! positions (0-based lines, columns in UTF-16 code units, as the protocol counts by default).

use lsp_types::{Position, Range};

/// Line starts of one text, built once per request.
#[derive(Debug, Clone)]
pub struct LineIndex<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    /// Indexes `text`. Lines end at `\n`; a `\r` before it stays on its line.
    pub fn new(text: &'t str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// The position of byte `offset` (clamped to the text and to a character boundary).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let column: usize = self.text[start..offset].chars().map(char::len_utf16).sum();
        Position::new(line as u32, column as u32)
    }

    /// The range of a byte span.
    pub fn range(&self, span: std::ops::Range<usize>) -> Range {
        Range::new(self.position(span.start), self.position(span.end))
    }

    /// The byte offset of a position (clamped to its line, and to the text).
    pub fn offset(&self, at: Position) -> usize {
        let Some(&start) = self.starts.get(at.line as usize) else {
            return self.text.len();
        };
        let mut units = 0;
        for (i, c) in self.text[start..].char_indices() {
            if units >= at.character as usize || c == '\n' {
                return start + i;
            }
            units += c.len_utf16();
        }
        self.text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_round_trip() {
        let text = "{\n  \"é😀\": 1\n}";
        let index = LineIndex::new(text);
        let one = text.find('1').unwrap();
        assert_eq!(index.position(one), Position::new(1, 9));
        assert_eq!(index.offset(Position::new(1, 9)), one);
        assert_eq!(index.offset(Position::new(9, 0)), text.len());
    }
}
