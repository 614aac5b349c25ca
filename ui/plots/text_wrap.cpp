#include "ui/plots/text_wrap.h"

#include <QFont>
#include <QFontMetrics>
#include <QStringList>

namespace pm::ui {

QString wrapText(const QString& text, const QFont& font, int width) {
  const QFontMetrics fm(font);
  if (fm.horizontalAdvance(text) <= width) return text;
  QStringList lines;
  QString line;
  for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
    if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
      lines << line;
      line = word;
    } else {
      line = longer;
    }
  }
  if (!line.isEmpty()) lines << line;
  return lines.join(QLatin1Char('\n'));
}

}  // namespace pm::ui
